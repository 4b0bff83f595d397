//! Command-line flags shared by every binary.

use std::net::SocketAddr;

use crate::LogFormat;

/// Env var for `--admin-addr`.
pub const ADMIN_ADDR_ENV: &str = "ISOLANE_ADMIN_ADDR";
/// Env var for `--log-format`.
pub const LOG_FORMAT_ENV: &str = "ISOLANE_LOG_FORMAT";
/// Where the admin server listens unless told otherwise.
pub const DEFAULT_ADMIN_ADDR: &str = "0.0.0.0:9090";

/// Admin and logging flags, to `#[command(flatten)]` into a binary's parser.
#[derive(Clone, Debug, PartialEq, Eq, clap::Args)]
pub struct AdminArgs {
    /// Address of the admin server (/live, /ready, /metrics).
    #[arg(long, env = ADMIN_ADDR_ENV, default_value = DEFAULT_ADMIN_ADDR)]
    pub admin_addr: SocketAddr,

    /// Log line format; the filter comes from ISOLANE_LOG or RUST_LOG.
    #[arg(long, env = LOG_FORMAT_ENV, value_enum, default_value_t = LogFormat::Plain)]
    pub log_format: LogFormat,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        admin: AdminArgs,
    }

    #[test]
    fn defaults_and_flags() {
        let cli = Cli::try_parse_from(["bin"]).unwrap();
        assert_eq!(cli.admin.admin_addr, DEFAULT_ADMIN_ADDR.parse().unwrap());
        assert_eq!(cli.admin.log_format, LogFormat::Plain);
        let cli = Cli::try_parse_from([
            "bin",
            "--admin-addr",
            "127.0.0.1:9999",
            "--log-format",
            "json",
        ])
        .unwrap();
        assert_eq!(cli.admin.admin_addr.port(), 9999);
        assert_eq!(cli.admin.log_format, LogFormat::Json);
        assert!(Cli::try_parse_from(["bin", "--admin-addr", "nowhere"]).is_err());
    }

    #[test]
    fn flags_are_documented_with_their_env_vars() {
        let help = <Cli as clap::CommandFactory>::command()
            .render_long_help()
            .to_string();
        assert!(help.contains(ADMIN_ADDR_ENV), "{help}");
        assert!(help.contains(LOG_FORMAT_ENV), "{help}");
    }
}
