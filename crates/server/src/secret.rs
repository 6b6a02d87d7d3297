//! A flag's value that must never be printed: tokens, signing secrets, URLs with passwords.
//!
//! [`Cli`](crate::Cli) derives `Debug` (clap needs it, and so does whoever logs their
//! configuration), so every secret flag holds a [`Secret`], whose `Debug` prints
//! `Secret(***)` whatever it holds: `format!("{cli:?}")` can go to a log. The value is read
//! only where it is used, by [`Secret::expose`], so a search for that name finds every
//! place a secret leaves its box. It is a newtype, not the `secrecy` crate: nothing here
//! needs memory zeroed on drop (the same strings live on in the parsed settings), only a
//! `Debug` that hides them.

use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;

/// A string whose `Debug` hides it; see the module docs.
///
/// # Examples
///
/// ```
/// use askbus_server::Secret;
///
/// let token: Secret = "hunter2-hunter2".parse().unwrap();
/// assert_eq!(format!("{token:?}"), "Secret(***)");
/// assert_eq!(token.expose(), "hunter2-hunter2");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The value itself, for the one place that uses it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl FromStr for Secret {
    type Err = Infallible;

    fn from_str(value: &str) -> Result<Self, Infallible> {
        Ok(Self(value.to_owned()))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("Secret(***)")
    }
}
