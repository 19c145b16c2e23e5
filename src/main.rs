fn main() -> std::process::ExitCode {
    kelp::cli::main()
}
