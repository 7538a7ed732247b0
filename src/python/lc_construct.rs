//! Making langchain-core message objects from core values without running
//! pydantic's validation on them, as pydantic's `model_construct` does (but without
//! its per-call introspection, which costs more than validating).
//!
//! A core message's fields are valid already (they were read from a message, or made
//! by the engine, in langchain-core's shapes), and building a message's object is the
//! largest cost of a step that hands Python a new message (a tool's answer in an
//! agent loop). The defaults come from langchain-core itself: a sample object of each
//! class is made once with the validating constructor, and its fields are the
//! template every new object starts from. A class whose sample does not look like a
//! plain pydantic model (private attributes set) is built with its constructor.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PySet};

/// `object.__new__` and `object.__setattr__`: pydantic models keep their state in
/// four slots that these set without going through the model's own `__setattr__`.
static OBJECT: PyOnceLock<(Py<PyAny>, Py<PyAny>)> = PyOnceLock::new();

fn object_fns(py: Python<'_>) -> PyResult<&(Py<PyAny>, Py<PyAny>)> {
    OBJECT.get_or_try_init(py, || {
        let object = py.import("builtins")?.getattr("object")?;
        Ok::<_, PyErr>((
            object.getattr("__new__")?.unbind(),
            object.getattr("__setattr__")?.unbind(),
        ))
    })
}

/// How to make objects of one langchain-core message class.
pub struct Template {
    cls: Py<PyAny>,
    /// The sample object's fields (every field, defaults included); `None` when the
    /// class is built with its constructor.
    fields: Option<Py<PyDict>>,
    /// Whether the class keeps extra fields (`__pydantic_extra__` a dict, not `None`).
    extra: bool,
}

impl Template {
    /// The template of `cls`, from a sample made with `sample` (the keywords its
    /// constructor needs).
    pub fn new(cls: Py<PyAny>, sample: &Bound<'_, PyDict>) -> PyResult<Template> {
        let py = sample.py();
        let obj = cls.bind(py).call((), Some(sample))?;
        let plain = obj
            .getattr(intern!(py, "__pydantic_private__"))
            .is_ok_and(|p| p.is_none());
        let fields = match obj.getattr(intern!(py, "__dict__")) {
            Ok(d) if plain => Some(d.cast::<PyDict>()?.copy()?.unbind()),
            _ => None,
        };
        let extra = obj
            .getattr(intern!(py, "__pydantic_extra__"))
            .is_ok_and(|e| e.cast::<PyDict>().is_ok());
        Ok(Template { cls, fields, extra })
    }

    /// An object with the template's fields and `set` (which must hold a new object
    /// for every mutable field: the template's own are shared).
    pub fn make<'py>(&self, set: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyAny>> {
        let py = set.py();
        let cls = self.cls.bind(py);
        let Some(fields) = &self.fields else {
            return cls.call((), Some(set));
        };
        let d = fields.bind(py).copy()?;
        d.update(set.as_mapping())?;
        let (new, setattr) = object_fns(py)?;
        let obj = new.bind(py).call1((cls,))?;
        let setattr = setattr.bind(py);
        setattr.call1((&obj, intern!(py, "__dict__"), d))?;
        let given = PySet::new(py, set.keys())?;
        setattr.call1((&obj, intern!(py, "__pydantic_fields_set__"), given))?;
        let extra = if self.extra {
            PyDict::new(py).into_any()
        } else {
            py.None().into_bound(py)
        };
        setattr.call1((&obj, intern!(py, "__pydantic_extra__"), extra))?;
        setattr.call1((&obj, intern!(py, "__pydantic_private__"), py.None()))?;
        Ok(obj)
    }
}
