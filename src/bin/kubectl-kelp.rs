//! `kubectl-kelp`: kelp as a kubectl plugin, so `kubectl kelp doctor` works.
fn main() -> std::process::ExitCode {
    kelp::cli::main()
}
