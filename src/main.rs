#[global_allocator]
static HEAP: kelp::heap::Heap = kelp::heap::Heap;

fn main() -> std::process::ExitCode {
    kelp::cli::main()
}
