//! `_ironloop._Backoff`: the core's retry schedule ([`crate::retry::Backoff`]) for the
//! Python retry loops — node `RetryPolicy`s (`ironloop._retry`) and the retry
//! middleware (`ironloop.middleware.retry`). The loops stay in Python because what
//! they retry is a Python call; how long to wait and when to stop is decided here.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt};

use crate::retry::{Backoff, InvalidBackoff, Jitter};

/// One retry schedule, checked when it is made.
#[pyclass(name = "_Backoff", module = "ironloop._ironloop", frozen)]
pub struct PyBackoff(Backoff);

/// `max_retries` as a count: an int (not a bool) >= 0, named in the error as the
/// caller's API names it.
fn retries(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<u32> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "{name} must be an int >= 0, got {}",
            obj.repr()?
        )));
    }
    let n: i64 = obj.extract()?;
    if n < 0 {
        return Err(InvalidBackoff {
            name: name.to_owned(),
            value: n as f64,
        }
        .into());
    }
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

#[pymethods]
impl PyBackoff {
    /// `jitter`: "none", "up_to_one_second" (LangGraph's), "quarter" (LangChain's) or
    /// "equal"; `names`: the caller's names of `initial`, `factor`, `max` and
    /// `max_retries`, for the errors (default: the retry middleware's).
    #[new]
    #[pyo3(signature = (initial, factor, max, max_retries, jitter, names = None))]
    fn new(
        initial: f64,
        factor: f64,
        max: f64,
        max_retries: &Bound<'_, PyAny>,
        jitter: &str,
        names: Option<[String; 4]>,
    ) -> PyResult<Self> {
        let [initial_name, factor_name, max_name, retries_name] = names.unwrap_or_else(|| {
            [
                "initial_delay",
                "backoff_factor",
                "max_delay",
                "max_retries",
            ]
            .map(str::to_owned)
        });
        let max_retries = retries(max_retries, &retries_name)?;
        let jitter = match jitter {
            "none" => Jitter::None,
            "up_to_one_second" => Jitter::UpToOneSecond,
            "quarter" => Jitter::Quarter,
            "equal" => Jitter::Equal,
            other => {
                return Err(PyTypeError::new_err(format!(
                    "jitter must be 'none', 'up_to_one_second', 'quarter' or 'equal', got {other:?}"
                )))
            }
        };
        let names = [
            initial_name.as_str(),
            factor_name.as_str(),
            max_name.as_str(),
        ];
        Ok(PyBackoff(Backoff::checked(
            initial,
            factor,
            max,
            max_retries,
            jitter,
            names,
        )?))
    }

    /// The seconds to wait before retry `retry` (0 for the first), or None when the
    /// retries are spent; `unit` is the caller's random draw in [0, 1) for the jitter.
    fn wait(&self, retry: u32, unit: f64) -> Option<f64> {
        self.0.wait(retry, unit)
    }

    #[getter]
    fn max_retries(&self) -> u32 {
        self.0.max_retries
    }
}
