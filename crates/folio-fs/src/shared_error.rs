//! [`SharedError`]: the cause of an error that must stay `Clone` and `Eq`.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// An error `E` (an `io::Error`, a client's error) kept as the cause of an error that must stay
/// `Clone + Eq`: a [`BeneathError`](crate::BeneathError) inside a cloneable workspace error, a
/// hook run kept in a log, an MCP connection's failure kept by a cloneable agent. Clones share
/// the one error; two are equal when they are the same error or render the same message. It
/// displays as `E`, its `source()` is `E`'s own, and it derefs to `E` for matching on it (an
/// `io::Error`'s `kind()`).
#[derive(Debug)]
pub struct SharedError<E>(Arc<E>);

impl<E> SharedError<E> {
    /// Keeps `err`.
    pub fn new(err: E) -> Self {
        SharedError(Arc::new(err))
    }
}

impl<E> Clone for SharedError<E> {
    fn clone(&self) -> Self {
        SharedError(self.0.clone())
    }
}

impl<E> Deref for SharedError<E> {
    type Target = E;

    fn deref(&self) -> &E {
        &self.0
    }
}

impl<E> From<E> for SharedError<E> {
    fn from(err: E) -> Self {
        SharedError::new(err)
    }
}

impl<E: fmt::Display> fmt::Display for SharedError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<E: std::error::Error> std::error::Error for SharedError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl<E: fmt::Display> PartialEq for SharedError<E> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl<E: fmt::Display> Eq for SharedError<E> {}

#[cfg(test)]
mod tests {
    use std::io;

    use super::*;

    #[test]
    fn clones_are_equal_and_display_the_error() {
        let err = SharedError::new(io::Error::from_raw_os_error(2));
        assert_eq!(err.clone(), err);
        assert_eq!(err, SharedError::new(io::Error::from_raw_os_error(2)));
        assert_ne!(err, SharedError::new(io::Error::from_raw_os_error(13)));
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert_eq!(err.to_string(), io::Error::from_raw_os_error(2).to_string());
    }
}
