//! The profile's layout around a plugin, as DSH reads it: the `@local` link
//! DSH loads the row through, the `dsh.client` declaration its web host
//! composes, the `dsh.bundle` patch it reads for a profile bundle, and the patch
//! file itself. Each case's `says` is what DSH prints when it refuses the tree.

use serde_json::{Value, json};

use super::loader::{ESM_PLUGIN, esm, with};
use super::{Case, Link, Other};

/// A client bundle as DSH's web host loads it (a lazy registration).
const CLIENT: &str = "window.__ModuleLoader__.load({ id: '@local/p', factory: () => ({ apply() {} }) });\n";
/// What DSH prints when Node finds no package for the row.
const CANNOT_FIND: &str = "Cannot find package '@local/p' imported from";

/// A plugin with a browser half: `exports` with `./client` and `./package.json`,
/// the bundle `client.js`, and `dsh.client` as given.
fn client(name: &'static str, declaration: &Value) -> Case {
    client_with(
        name,
        &json!({ ".": "./index.js", "./client": "./client.js", "./package.json": "./package.json" }),
        declaration,
    )
}

fn client_with(name: &'static str, exports: &Value, declaration: &Value) -> Case {
    with(
        esm(name, &[("index.js", ESM_PLUGIN), ("client.js", CLIENT)]),
        json!({ "type": "module", "main": "index.js", "exports": exports, "dsh": { "client": declaration } }),
    )
}

fn web() -> Value {
    json!({ "platform": "web" })
}

/// A plugin that throws at apply, so a boot shows that it ran.
const Q_RAN: &str =
    "export const name = 'q';\nexport function apply() { throw new Error('q ran for @local/p'); }\n";
/// The same, for a copy of `p` in `node_modules`.
const COPY_RAN: &str = "export const name = 'p';\nexport function apply() { throw new Error('the copy in node_modules ran'); }\n";

#[expect(clippy::too_many_lines, reason = "the corpus: one tree per entry")]
pub(super) fn cases() -> Vec<Case> {
    let healthy = || esm("unused", &[("index.js", ESM_PLUGIN)]);
    let named = |name: &'static str| Case { name, ..healthy() };
    let bundle = |patch: &str| json!({ "type": "module", "main": "index.js", "dsh": { "bundle": { "patch": patch } } });
    vec![
        // The @local link DSH loads the row through.
        named("link-missing").link(Link::Missing).says(CANNOT_FIND),
        named("link-dangling")
            .link(Link::To("../../plugins/gone"))
            .says(CANNOT_FIND),
        named("link-to-another-plugin")
            .link(Link::To("../../plugins/q"))
            .other(Other {
                dir: "q",
                manifest: json!({ "type": "module", "main": "index.js" }),
                files: vec![("index.js", Q_RAN)],
                inserted: false,
            })
            .says("plugins/q"),
        named("link-is-a-directory")
            .link(Link::Directory(vec![("index.js", COPY_RAN)]))
            .says("node_modules/@local/p"),
        // dsh.client, as DSH's web host composes it.
        client("client-healthy", &web()),
        client("client-no-platform", &json!({})).says("dsh.client.platform must be a string"),
        client("client-platform-number", &json!({ "platform": 42 }))
            .says("dsh.client.platform must be a string"),
        client("client-not-an-object", &json!("web"))
            .says("has a non-object dsh.client declaration"),
        client("client-null", &Value::Null).says("has a non-object dsh.client declaration"),
        client("client-inject-not-a-list", &json!({ "platform": "web", "inject": "x" }))
            .says("dsh.client.inject must be a string array"),
        client("client-external-not-a-list", &json!({ "platform": "web", "external": "x" }))
            .says("dsh.client.external must be a string array"),
        client(
            "client-immediately-not-a-boolean",
            &json!({ "platform": "web", "immediately": "yes" }),
        )
        .says("dsh.client.immediately must be a boolean"),
        client("client-platform-not-web", &json!({ "platform": "browser" })),
        client_with(
            "client-export-default",
            &json!({ ".": "./index.js", "./client": { "default": "./client.js", "types": "./client.d.ts" }, "./package.json": "./package.json" }),
            &web(),
        ),
        client_with(
            "client-export-without-default",
            &json!({ ".": "./index.js", "./client": { "browser": "./client.js" }, "./package.json": "./package.json" }),
            &web(),
        )
        .says("must be a string or an object with a string default"),
        client_with(
            "client-bundle-missing",
            &json!({ ".": "./index.js", "./client": "./dist/client.js", "./package.json": "./package.json" }),
            &web(),
        )
        .says("client bundles not found"),
        client_with(
            "client-export-missing",
            &json!({ ".": "./index.js", "./package.json": "./package.json" }),
            &web(),
        )
        .says("declares dsh.client but exports no"),
        with(
            esm("client-no-exports", &[("index.js", ESM_PLUGIN), ("client.js", CLIENT)]),
            json!({ "type": "module", "main": "index.js", "dsh": { "client": { "platform": "web" } } }),
        )
        .says("declares dsh.client but exports no"),
        client_with(
            "client-package-json-not-exported",
            &json!({ ".": "./index.js", "./client": "./client.js" }),
            &web(),
        ),
        client(
            "client-external-itself",
            &json!({ "platform": "web", "external": ["@local/p/client"] }),
        )
        .says("that it answers itself"),
        client(
            "client-external-cycle",
            &json!({ "platform": "web", "external": ["@local/q"] }),
        )
        .other(Other {
            dir: "q",
            manifest: json!({
                "type": "module", "main": "index.js",
                "exports": { ".": "./index.js", "./client": "./client.js", "./package.json": "./package.json" },
                "dsh": { "client": { "platform": "web", "external": ["@local/p/client"] } }
            }),
            files: vec![("index.js", ESM_PLUGIN), ("client.js", CLIENT)],
            inserted: true,
        })
        .says("module graph cycle"),
        // dsh.bundle: read only for a bundle the profile lists.
        with(healthy(), bundle("./missing.yml")).tap_name("bundle-not-listed-patch-missing"),
        with(healthy(), bundle("./missing.yml"))
            .tap_name("bundle-listed-patch-missing")
            .bundle_listed()
            .says("failed to read overlay"),
        named("bundle-listed-without-bundle")
            .bundle_listed()
            .says("declares no dsh.bundle in its package.json"),
        with(
            esm(
                "bundle-listed-patch-not-a-list",
                &[("index.js", ESM_PLUGIN), ("cordis.patch.yml", "a: 1\n")],
            ),
            bundle("./cordis.patch.yml"),
        )
        .bundle_listed()
        .says("must be a top-level YAML array of loader patch entries"),
        // The profile's patch file.
        named("patch-comment-only")
            .patch("# nothing to add\n")
            .says("must be a top-level YAML array of loader patch entries"),
        named("patch-entry-not-a-mapping")
            .patch("- insert:\n    - id: p\n      name: '@local/p'\n- just a string\n")
            .says("must be a mapping (a loader patch entry)"),
        named("patch-empty-list").patch("[]\n"),
    ]
}

trait TapName {
    fn tap_name(self, name: &'static str) -> Self;
}

impl TapName for Case {
    fn tap_name(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }
}
