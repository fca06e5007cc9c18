//! The `dshkit` executable. Everything lives in the library; see `dshkit::main`.

fn main() -> std::process::ExitCode {
    dshkit::main(std::env::args_os())
}
