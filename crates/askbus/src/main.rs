//! `askbus`: the askbus server binary (`cargo install askbus --features server`). Its
//! `main` is [`askbus::server::main`]: flags, logging, the server, signals.

use std::process::ExitCode;

/// mimalloc instead of glibc's malloc. With many pending requests the heap holds millions of
/// small allocations, and glibc frees them into fastbins that one `free` of a larger chunk
/// then consolidates all at once, under the arena lock: the load bench saw worker threads
/// stalled for 230 ms in `malloc_consolidate` with two million questions pending (p99 of
/// replies 125 ms against the bare axum baseline's 9 ms). mimalloc frees into per-page lists
/// and has no such sweep. The library crates leave the choice to their embedders.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    askbus::server::main()
}
