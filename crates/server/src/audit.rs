//! `askbus audit …`: the audit log from the command line, and the key the server signs it
//! with.
//!
//! The server appends a receipt of every decision to its store's audit log (see the
//! `askbus-audit` crate) and seals the entries as they come ([`askbus_audit::Sealer`],
//! signing with `--audit-key` when given). These subcommands are the rest of the loop:
//!
//! - `askbus audit keygen --out FILE` writes a new Ed25519 key: FILE (the secret, PKCS#8
//!   PEM, mode 0600) for `--audit-key`, and FILE.pub (the public key, SPKI PEM) for
//!   whoever verifies. It never overwrites either.
//! - `askbus audit export` seals what is not sealed yet (with `--audit-key`, as the server
//!   would), then writes every entry to stdout, one JSON object per line. It opens the
//!   store the server uses (`--store`, `ASKBUS_STORE`); a SQLite file is one process's at
//!   a time, so export from it while the server is stopped (or read `GET /audit`).
//! - `askbus audit verify FILE [--public-key K]` checks an export offline, from the file
//!   alone: it exits 0 and prints one line when the chain (and, with a key, every
//!   signature) holds, and fails naming the first line and entry that does not. `K` is
//!   the public key's file (PEM) or its 64 hex digits.

use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use askbus_audit::{AuditError, Sealer, VerifyError, VerifyingKey};
use askbus_store::{MemoryStore, RedisStore, SqliteStore, Store, StoreError};

use crate::{Cli, ConfigError, StoreUrl};

/// The subcommands of `askbus audit`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum AuditCommand {
    /// Write a new Ed25519 signing key for --audit-key: FILE (secret, owner-only) and
    /// FILE.pub (public, for `askbus audit verify --public-key`). Never overwrites.
    Keygen {
        /// The secret key's file; the public key goes to FILE.pub.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Seal what is unsealed (signing with --audit-key), then write every audit entry to
    /// stdout as JSON lines. Opens --store (stop the server first for a SQLite file).
    Export,
    /// Check an export offline: exit 0 if every entry holds, else name the first that
    /// does not. With --public-key, every entry must carry a valid signature.
    Verify {
        /// The export to check (JSON lines, as `askbus audit export` writes them).
        file: PathBuf,
        /// The public key: its file (PEM, as keygen writes FILE.pub) or 64 hex digits.
        #[arg(long, value_name = "K")]
        public_key: Option<String>,
    },
}

/// Why an `askbus audit` command failed; the message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum AuditCommandError {
    /// A flag cannot be used.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The store cannot be opened or read.
    #[error("cannot read the audit log: {0}")]
    Store(#[from] StoreError),
    /// A key, a file or the log itself failed.
    #[error(transparent)]
    Audit(#[from] AuditError),
    /// `--store` names a SQLite file that does not exist (export never creates one).
    #[error("no store at {0}: pass the --store the server uses")]
    NoStore(PathBuf),
    /// The export does not hold.
    #[error("{file}: {error}")]
    Verify {
        /// The export.
        file: String,
        /// Its first entry that does not hold.
        error: VerifyError,
    },
}

/// Runs `command`, with the global flags of `cli` (`--store`, `--audit-key`).
///
/// # Errors
///
/// [`AuditCommandError`]: for `verify`, naming the first entry of the export that does not
/// hold.
pub async fn run(command: &AuditCommand, cli: &Cli) -> Result<(), AuditCommandError> {
    let mut stdout = std::io::stdout().lock();
    match command {
        AuditCommand::Keygen { out } => {
            let key = askbus_audit::generate_key()?;
            let public = askbus_audit::write_key_files(out, &key)?;
            let pem = askbus_audit::public_key_pem(&key.verifying_key())?;
            write!(
                stdout,
                "secret key: {} (pass it as --audit-key)\npublic key: {} (for verify --public-key)\n{pem}",
                out.display(),
                public.display()
            )
            .map_err(AuditError::from)?;
        }
        AuditCommand::Export => {
            let store = open_store(cli).await?;
            let key = load_audit_key(cli.audit_key.as_deref())?;
            Sealer::new(Arc::clone(&store), key).seal_pending().await?;
            let mut out = std::io::BufWriter::new(stdout);
            let summary = askbus_audit::export(&*store, &mut out).await?;
            tracing::info!(
                "exported {} audit entries ({} signed); head {}",
                summary.entries,
                summary.signed,
                summary.head.as_deref().unwrap_or("none")
            );
        }
        AuditCommand::Verify { file, public_key } => {
            let key = public_key.as_deref().map(read_public_key).transpose()?;
            let opened = std::fs::File::open(file).map_err(|error| {
                AuditError::Io(std::io::Error::new(
                    error.kind(),
                    format!("{}: {error}", file.display()),
                ))
            })?;
            let summary =
                askbus_audit::verify(BufReader::new(opened), key.as_ref()).map_err(|error| {
                    AuditCommandError::Verify {
                        file: file.display().to_string(),
                        error,
                    }
                })?;
            let signatures = match key {
                Some(_) => format!("{} signatures verified", summary.signed),
                None => "signatures not checked (no --public-key)".to_owned(),
            };
            writeln!(
                stdout,
                "OK: {} entries, chain intact, {signatures}; head {}",
                summary.entries,
                summary.head.as_deref().unwrap_or("none (empty log)")
            )
            .map_err(AuditError::from)?;
        }
    }
    Ok(())
}

/// The signing key of `--audit-key`, if given.
///
/// # Errors
///
/// [`ConfigError::AuditKey`] if the file cannot be read or holds no Ed25519 secret key.
pub(crate) fn load_audit_key(
    path: Option<&Path>,
) -> Result<Option<askbus_audit::SigningKey>, ConfigError> {
    path.map(|path| {
        askbus_audit::read_signing_key(path)
            .map_err(|error| ConfigError::AuditKey(format!("{}: {error}", path.display())))
    })
    .transpose()
}

/// `--public-key K`: the file `K` (PEM or hex), or `K` itself as 64 hex digits.
fn read_public_key(key: &str) -> Result<VerifyingKey, AuditError> {
    let path = Path::new(key);
    if path.is_file() {
        let text = std::fs::read_to_string(path).map_err(|error| {
            AuditError::Io(std::io::Error::new(error.kind(), format!("{key}: {error}")))
        })?;
        return askbus_audit::parse_public_key(&text);
    }
    askbus_audit::parse_public_key(key)
}

/// The store `--store` names (by default the server's, `sqlite:askbus.db`).
async fn open_store(cli: &Cli) -> Result<Arc<dyn Store>, AuditCommandError> {
    let url = match &cli.store {
        Some(url) => url.expose().parse()?,
        None => StoreUrl::default_for(cli.command.as_ref()),
    };
    Ok(match url {
        StoreUrl::Memory => Arc::new(MemoryStore::new()),
        StoreUrl::Sqlite(path) if !path.exists() => {
            return Err(AuditCommandError::NoStore(path));
        }
        StoreUrl::Sqlite(path) => Arc::new(SqliteStore::open(path)?),
        StoreUrl::Redis(location) => Arc::new(RedisStore::open_at(&location).await?),
    })
}
