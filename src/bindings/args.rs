//! Arguments that several constructors take, converted and checked in one place.

use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt};

use super::errors::Class;

/// A time limit given from Python in seconds: an int or a float, above 0 and finite
/// (a bool is not a number of seconds). As a `timeout` argument it is an
/// `Option<Timeout>`: None (no limit, or the caller's default) is taken before the
/// conversion runs; anything else that is not a positive number raises
/// `ironloop.errors.InvalidArgumentError` (a `ValueError`):
/// `timeout must be a positive number of seconds (or None), got -1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeout(pub Duration);

impl Timeout {
    /// `obj` as a time limit; the error message starts with `name`.
    pub fn required(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Timeout> {
        Self::check(obj, name, "")
    }

    /// Like [`Timeout::required`], with None allowed (and returned as None).
    pub fn optional(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Option<Timeout>> {
        if obj.is_none() {
            return Ok(None);
        }
        Self::check(obj, name, " (or None)").map(Some)
    }

    pub fn secs_f64(self) -> f64 {
        self.0.as_secs_f64()
    }

    fn check(obj: &Bound<'_, PyAny>, name: &str, or_none: &str) -> PyResult<Timeout> {
        let number = !obj.is_instance_of::<PyBool>()
            && (obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyFloat>());
        let duration = number
            .then(|| obj.extract::<f64>().ok())
            .flatten()
            .filter(|s| *s > 0.0)
            .and_then(|s| Duration::try_from_secs_f64(s).ok());
        match duration {
            Some(d) => Ok(Timeout(d)),
            None => Err(Class::InvalidArgument.err(
                obj.py(),
                format!(
                    "{name} must be a positive number of seconds{or_none}, got {}",
                    obj.repr()?
                ),
            )),
        }
    }
}

/// `obj` as a size limit (bytes, or a count of values): an int >= 1 (a bool is not a
/// size); anything else raises `ironloop.errors.InvalidArgumentError` (a
/// `ValueError`) naming the argument: `max_output_bytes must be an int >= 1, got 0`.
/// The one check of every source's size limits (workspace, MCP, OpenAPI).
pub fn size_limit(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<usize> {
    let size = (!obj.is_instance_of::<PyBool>() && obj.is_instance_of::<PyInt>())
        .then(|| obj.extract::<usize>().ok())
        .flatten()
        .filter(|n| *n >= 1);
    size.ok_or_else(|| {
        let shown = obj.repr().map(|r| r.to_string()).unwrap_or_default();
        Class::InvalidArgument.err(obj.py(), format!("{name} must be an int >= 1, got {shown}"))
    })
}

/// For the `timeout` arguments, which all take None too (as `Option<Timeout>`).
impl<'a, 'py> FromPyObject<'a, 'py> for Timeout {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Self::check(&obj, "timeout", " (or None)")
    }
}

/// `value` checked as a time limit in seconds and returned as a float (None stays
/// None), for the Python side (`@tool(timeout=...)`); `name` starts the message.
#[pyfunction]
#[pyo3(signature = (value, name = "timeout"))]
pub fn _timeout_seconds(value: &Bound<'_, PyAny>, name: &str) -> PyResult<Option<f64>> {
    Ok(Timeout::optional(value, name)?.map(Timeout::secs_f64))
}
