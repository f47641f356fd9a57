//! A trivial `hello` tool served natively by rmcp over stdio: the reference
//! point of `make bench`'s transport row.

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    bench::serve_stdio().await
}
