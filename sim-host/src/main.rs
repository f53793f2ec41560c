//! `sim-host --scene FILE --fd N --mode lockstep|realtime [--cpu N]`: the plant process (see
//! `sim_host::cli`).

fn main() -> std::process::ExitCode {
    // SAFETY: this is the process's entry point, called once; the `--fd` descriptor was inherited
    // from the harness for this process alone.
    unsafe { sim_host::cli::main(std::env::args().skip(1)) }
}
