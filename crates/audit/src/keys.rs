//! The signing key's files: the secret key as PKCS#8 PEM (mode 0600), the public key as
//! SPKI PEM beside it (`FILE.pub`).

use std::io::Write;
use std::path::{Path, PathBuf};

use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::spki::{DecodePublicKey, EncodePublicKey};
use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use ed25519_dalek::{SigningKey, VerifyingKey};

use crate::AuditError;

/// A new signing key, from the operating system's random source.
///
/// # Errors
///
/// [`AuditError::Key`] if the operating system gives no random bytes.
pub fn generate_key() -> Result<SigningKey, AuditError> {
    let mut secret = [0; ed25519_dalek::SECRET_KEY_LENGTH];
    getrandom::fill(&mut secret)
        .map_err(|error| AuditError::Key(format!("no random bytes for a key: {error}")))?;
    Ok(SigningKey::from_bytes(&secret))
}

/// The file the public key of the secret key file `secret` goes in: `secret` + `.pub`.
pub fn public_key_path(secret: &Path) -> PathBuf {
    let mut path = secret.as_os_str().to_owned();
    path.push(".pub");
    path.into()
}

/// Writes `key` to the new file `secret` (PKCS#8 PEM, readable by its owner only) and its
/// public key to the new file [`public_key_path`] (SPKI PEM); answers the latter.
///
/// # Errors
///
/// [`AuditError::Io`] if either file exists (nothing is overwritten; if only the public
/// one exists, nothing is written) or cannot be written; [`AuditError::Key`] if the key
/// cannot be encoded.
pub fn write_key_files(secret: &Path, key: &SigningKey) -> Result<PathBuf, AuditError> {
    let public = public_key_path(secret);
    if public.exists() {
        return Err(AuditError::Io(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("{} exists: not overwritten", public.display()),
        )));
    }
    let secret_pem = key
        .to_pkcs8_pem(LineEnding::LF)
        .map_err(|error| AuditError::Key(error.to_string()))?;
    let public_pem = public_key_pem(&key.verifying_key())?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(secret).map_err(|error| named(secret, error))?;
    file.write_all(secret_pem.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|error| named(secret, error))?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&public)
        .map_err(|error| named(&public, error))?;
    file.write_all(public_pem.as_bytes())
        .map_err(|error| named(&public, error))?;
    Ok(public)
}

/// The public key as SPKI PEM (`-----BEGIN PUBLIC KEY-----`).
///
/// # Errors
///
/// [`AuditError::Key`] if it cannot be encoded.
pub fn public_key_pem(key: &VerifyingKey) -> Result<String, AuditError> {
    key.to_public_key_pem(LineEnding::LF)
        .map_err(|error| AuditError::Key(error.to_string()))
}

/// The signing key in the PKCS#8 PEM file `path` (as [`write_key_files`] writes it).
///
/// # Errors
///
/// [`AuditError::Io`] if it cannot be read, [`AuditError::Key`] if it holds no Ed25519
/// secret key.
pub fn read_signing_key(path: &Path) -> Result<SigningKey, AuditError> {
    let text = std::fs::read_to_string(path).map_err(|error| named(path, error))?;
    SigningKey::from_pkcs8_pem(&text).map_err(|error| {
        AuditError::Key(format!(
            "{} is not an Ed25519 secret key in PKCS#8 PEM ({error})",
            path.display()
        ))
    })
}

/// A public key written as SPKI PEM (as [`write_key_files`] writes it) or as 64 hex digits.
///
/// # Errors
///
/// [`AuditError::Key`] if `text` is neither.
pub fn parse_public_key(text: &str) -> Result<VerifyingKey, AuditError> {
    let text = text.trim();
    if text.starts_with("-----BEGIN") {
        return VerifyingKey::from_public_key_pem(text)
            .map_err(|error| AuditError::Key(format!("not an Ed25519 public key: {error}")));
    }
    let mut bytes = [0; ed25519_dalek::PUBLIC_KEY_LENGTH];
    hex::decode_to_slice(text, &mut bytes)
        .map_err(|_| AuditError::Key("a public key is SPKI PEM or 64 hex digits".to_owned()))?;
    VerifyingKey::from_bytes(&bytes)
        .map_err(|error| AuditError::Key(format!("not an Ed25519 public key: {error}")))
}

/// An I/O error that names its file.
fn named(path: &Path, error: std::io::Error) -> AuditError {
    AuditError::Io(std::io::Error::new(
        error.kind(),
        format!("{}: {error}", path.display()),
    ))
}
