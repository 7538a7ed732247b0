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
//! plain pydantic model (private attributes set, or objects not allocated by
//! `PyType_GenericAlloc`) is built with its constructor.

use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PySet, PyString};

/// A message's fields as they are given to [`Template::make`]: each name (interned)
/// with its value.
pub type Fields<'py> = Vec<(&'py Bound<'py, PyString>, Bound<'py, PyAny>)>;

/// `fields` as a keyword dict (for a constructor call).
pub fn kwargs<'py>(py: Python<'py>, fields: &Fields<'py>) -> PyResult<Bound<'py, PyDict>> {
    let kw = PyDict::new(py);
    for (k, v) in fields {
        kw.set_item(*k, v)?;
    }
    Ok(kw)
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
        // What `object.__new__` then the four slot writes stand for: a plain pydantic
        // model of a heap type (allocated by `PyType_GenericAlloc`, as every class a
        // `class` statement makes), with no private attributes.
        let plain = obj
            .getattr(intern!(py, "__pydantic_private__"))
            .is_ok_and(|p| p.is_none())
            && generic_alloc(cls.bind(py));
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
    ///
    /// Through the C API rather than `object.__new__` / `object.__setattr__` called from
    /// here: a step that hands Python a new message pays this once per message, and
    /// the calls, their argument tuples and a keyword dict merged into the fields cost
    /// three times the work itself.
    pub fn make<'py>(&self, py: Python<'py>, set: &Fields<'py>) -> PyResult<Bound<'py, PyAny>> {
        let cls = self.cls.bind(py);
        let Some(fields) = &self.fields else {
            return cls.call((), Some(&kwargs(py, set)?));
        };
        let d = fields.bind(py).copy()?;
        let given = PySet::empty(py)?;
        for (k, v) in set {
            d.set_item(*k, v)?;
            given.add(*k)?;
        }
        // The fields-set holds field names only (pydantic adds names, never anything
        // else), so it can be in no reference cycle: out of the garbage collector's
        // lists it is one container less per message, and a history of langchain-core
        // messages otherwise triggers a collection every few dozen messages.
        // SAFETY: `given` is a live set, tracked since `PySet_New`; untracking a
        // tracked object is what `gc` itself does for acyclic tuples and dicts.
        unsafe { ffi::PyObject_GC_UnTrack(given.as_ptr().cast()) };
        // SAFETY: `cls` is a heap type allocated by `PyType_GenericAlloc` (checked in
        // `new`), which returns a new reference or NULL with an exception set.
        let obj = unsafe {
            let raw = ffi::PyType_GenericAlloc(cls.as_ptr().cast::<ffi::PyTypeObject>(), 0);
            Bound::from_owned_ptr_or_err(py, raw)?
        };
        let extra = if self.extra {
            PyDict::new(py).into_any()
        } else {
            py.None().into_bound(py)
        };
        set_slot(&obj, intern!(py, "__dict__"), d.as_any())?;
        set_slot(&obj, intern!(py, "__pydantic_fields_set__"), given.as_any())?;
        set_slot(&obj, intern!(py, "__pydantic_extra__"), &extra)?;
        set_slot(
            &obj,
            intern!(py, "__pydantic_private__"),
            &py.None().into_bound(py),
        )?;
        Ok(obj)
    }
}

/// Whether objects of `cls` are allocated by `PyType_GenericAlloc` (what
/// `object.__new__` calls for them).
fn generic_alloc(cls: &Bound<'_, PyAny>) -> bool {
    if cls.cast::<pyo3::types::PyType>().is_err() {
        return false;
    }
    // SAFETY: `cls` is a type object; `PyType_GetSlot` reads one of its slots (a heap
    // type's on every version; the classes here are heap types) and sets no error
    // for a slot it has.
    let alloc =
        unsafe { ffi::PyType_GetSlot(cls.as_ptr().cast::<ffi::PyTypeObject>(), ffi::Py_tp_alloc) };
    let generic = (ffi::PyType_GenericAlloc as ffi::allocfunc) as *mut std::ffi::c_void;
    !alloc.is_null() && alloc == generic
}

/// `object.__setattr__(obj, name, value)`: the slot or `__dict__` written without the
/// model's own `__setattr__` (pydantic's validates and records the field as set).
fn set_slot(
    obj: &Bound<'_, PyAny>,
    name: &Bound<'_, PyString>,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    // SAFETY: the GIL is held (the `Bound`s prove it); the pointers are live objects.
    // `PyObject_GenericSetAttr` returns -1 with an exception set on failure.
    let rc = unsafe { ffi::PyObject_GenericSetAttr(obj.as_ptr(), name.as_ptr(), value.as_ptr()) };
    if rc < 0 {
        return Err(PyErr::fetch(obj.py()));
    }
    Ok(())
}
