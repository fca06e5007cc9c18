//! Any bytes as a cassette: the reader never panics; what it accepts survives an
//! atomic write and a second read unchanged, and lint and the timeline run on it.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(loaded) = dshkit_echo::cassette::parse(Path::new("fuzz.jsonl"), data) else {
        return;
    };
    let _ = dshkit_echo::lint::lint(&loaded.cassette);
    for record in &loaded.cassette.records {
        let _ = dshkit_echo::lint::entry(record);
    }
    let dir = std::env::temp_dir().join(format!("dshkit-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("roundtrip.jsonl");
    dshkit_echo::writer::write_atomic(&path, &loaded.cassette).expect("writing an accepted cassette");
    let again = dshkit_echo::cassette::read(&path).expect("reading back what was written");
    assert_eq!(again.cassette, loaded.cassette, "the round trip changed the cassette");
});
