//! `kubectl-kelp`: kelp as a kubectl plugin, so `kubectl kelp doctor` works.
#[global_allocator]
static HEAP: kelp::heap::Heap = kelp::heap::Heap;

fn main() -> std::process::ExitCode {
    kelp::cli::main()
}
