//! The `dshkit` executable. Everything lives in the library; see `dshkit::main`.

// Echo loads cassettes of many small JSON trees and the MCP server allocates per
// message; mimalloc makes both markedly cheaper than the system allocator.
#[cfg(not(target_os = "macos"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    dshkit::main(std::env::args_os())
}
