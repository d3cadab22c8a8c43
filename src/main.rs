//! The gateway program: logging, the command line and settings around the library's
//! gateway (`src/lib.rs`), the lines scripts read its addresses from, SIGTERM for a
//! graceful stop (SIGHUP reloads the TLS files), and the exit code.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use iggy_kafka_gateway::{start, LogFormat, Settings, Sighup, StartError};

fn main() -> ExitCode {
    let config_file = match parse_args() {
        Ok(f) => f,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let settings = match Settings::load(config_file.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("configuration error: {e}");
            return ExitCode::from(2);
        }
    };
    log_to_stderr(settings.log_format);
    raise_open_file_limit();
    match actix_rt::System::new().block_on(run(settings)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "gateway stopped");
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Logs what `RUST_LOG` asks for (by default info, with the storage engine's own info
/// lines, flushes and compactions, and the Iggy SDK's per-connection ones left out), in
/// `format`.
fn log_to_stderr(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "info,lsm_tree=warn,fjall=warn,iggy=warn".into());
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => logs.init(),
        LogFormat::Json => logs.json().init(),
    }
}

/// `--config PATH` is the only argument.
fn parse_args() -> Result<Option<PathBuf>, String> {
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next(), args.next()) {
        (None, _, _) => Ok(None),
        (Some("--config"), Some(path), None) => Ok(Some(PathBuf::from(path))),
        _ => Err("usage: iggy-kafka-gateway [--config PATH]\nsettings also come from IGGY_KAFKA_* variables".into()),
    }
}

async fn run(settings: Settings) -> Result<(), StartError> {
    let gateway = start(settings, Sighup::ReloadsTls).await?;
    // Tests and scripts read the bound addresses from these lines: one per listener,
    // then the first listener's again as "listening on", then the admin listener's.
    let mut lines = String::new();
    for (name, at) in &gateway.listeners {
        lines += &format!("iggy-kafka-gateway listener {name} on {at}\n");
    }
    lines += &format!(
        "iggy-kafka-gateway listening on {}\niggy-kafka-gateway admin on http://{}\n",
        gateway.addr, gateway.admin
    );
    // One write, so a reader that stops after the first lines cannot make the rest fail.
    let _ = std::io::stdout().lock().write_all(lines.as_bytes());

    wait_for_signal().await;
    gateway.stop().await;
    Ok(())
}

/// Every client is a socket and every partition written on the embedded store an open
/// file: the soft limit on open files (often 1024) goes up to the hard one, as a
/// Kafka broker's operator is told to raise it.
fn raise_open_file_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: both calls only read or write the struct passed, which outlives them.
    let raised = unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0
        }
    };
    if !raised {
        tracing::warn!(error = %std::io::Error::last_os_error(), "could not raise the limit on open files");
    }
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {},
                _ = tokio::signal::ctrl_c() => {},
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "no SIGTERM handler; stopping on Ctrl-C only");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
