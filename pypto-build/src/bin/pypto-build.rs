//! The `pypto-build` command line; see [`pypto_build::unstable::cli`].

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code =
        pypto_build::unstable::cli::run(&args, &mut std::io::stdout(), &mut std::io::stderr());
    std::process::exit(code);
}
