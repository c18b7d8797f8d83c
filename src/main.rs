//! The `podlife` binary: hands over to `podlife::cli::main`.

fn main() -> std::process::ExitCode {
    podlife::cli::main()
}
