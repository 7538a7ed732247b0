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

use std::sync::Mutex;

use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFrozenSet, PyString};

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
    /// The descriptors of the four slots a pydantic model writes, in [`SLOTS`]'s order,
    /// each with its setter: written through them straight, without the attribute
    /// look-up `object.__setattr__` does first (four per message made).
    slots: Vec<(Py<PyAny>, ffi::descrsetfunc)>,
    /// Fields-sets made before, each with the names given (the interned names'
    /// addresses): a message kind is made with the same few combinations of fields,
    /// and copying a set costs a third of adding its names one by one.
    sets: Mutex<Vec<(Vec<usize>, Py<PyFrozenSet>)>>,
}

/// The slots of a pydantic model's instance, as [`Template::make`] writes them.
const SLOTS: [&str; 4] = [
    "__dict__",
    "__pydantic_fields_set__",
    "__pydantic_extra__",
    "__pydantic_private__",
];

/// How many combinations of given fields a template keeps sets of.
const SETS: usize = 8;

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
        let slots = SLOTS
            .iter()
            .map(|name| slot_setter(cls.bind(py), name))
            .collect::<PyResult<Option<Vec<_>>>>()?;
        // Without a setter for every slot, the class is built with its constructor.
        let fields = fields.filter(|_| slots.is_some());
        Ok(Template {
            cls,
            fields,
            extra,
            slots: slots.unwrap_or_default(),
            sets: Mutex::new(Vec::new()),
        })
    }

    /// A new fields-set of `set`'s names, copied from the one kept for them (made and
    /// kept on first use).
    fn fields_set<'py>(&self, py: Python<'py>, set: &Fields<'py>) -> PyResult<Bound<'py, PyAny>> {
        let key: Vec<usize> = set.iter().map(|(k, _)| k.as_ptr() as usize).collect();
        let kept = {
            let sets = self.sets.lock().unwrap_or_else(|p| p.into_inner());
            sets.iter()
                .find(|(k, _)| *k == key)
                .map(|(_, s)| s.clone_ref(py))
        };
        let kept = match kept {
            Some(s) => s,
            None => {
                let s = PyFrozenSet::new(py, set.iter().map(|(k, _)| *k))?.unbind();
                let mut sets = self.sets.lock().unwrap_or_else(|p| p.into_inner());
                if sets.len() < SETS {
                    sets.push((key, s.clone_ref(py)));
                }
                s
            }
        };
        // SAFETY: the GIL is held; `PySet_New` copies an iterable (a set's entries
        // straight, hashes kept) and returns a new reference or NULL with an error.
        let given = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PySet_New(kept.as_ptr()))? };
        // The fields-set holds field names only (pydantic adds names, never anything
        // else), so it can be in no reference cycle: out of the garbage collector's
        // lists it is one container less per message, and a history of langchain-core
        // messages otherwise triggers a collection every few dozen messages.
        // SAFETY: `given` is a live set, tracked since `PySet_New`; untracking a
        // tracked object is what `gc` itself does for acyclic tuples and dicts.
        unsafe { ffi::PyObject_GC_UnTrack(given.as_ptr().cast()) };
        Ok(given)
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
        for (k, v) in set {
            d.set_item(*k, v)?;
        }
        let given = self.fields_set(py, set)?;
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
        let none = py.None().into_bound(py);
        for ((descr, setter), value) in self.slots.iter().zip([d.as_any(), &given, &extra, &none]) {
            // SAFETY: the GIL is held; `setter` is the `tp_descr_set` of `descr`'s type,
            // called as `object.__setattr__` calls it once it has found `descr`: with
            // the descriptor, the instance and the value (borrowed); -1 means an
            // exception is set.
            if unsafe { setter(descr.as_ptr(), obj.as_ptr(), value.as_ptr()) } < 0 {
                return Err(PyErr::fetch(py));
            }
        }
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

/// The descriptor of the slot `name` on `cls` (the first class of its MRO that
/// defines it, as an attribute look-up finds it) with its type's setter; `None` when
/// the class has no such data descriptor.
fn slot_setter(
    cls: &Bound<'_, PyAny>,
    name: &str,
) -> PyResult<Option<(Py<PyAny>, ffi::descrsetfunc)>> {
    let py = cls.py();
    for c in cls.getattr(intern!(py, "__mro__"))?.try_iter()? {
        let Some(descr) = c?.getattr(intern!(py, "__dict__"))?.get_item(name).ok() else {
            continue;
        };
        // SAFETY: `descr` is a live object and its type a type object; since Python
        // 3.10 `PyType_GetSlot` reads any type's slots (static types included) and
        // returns NULL for a slot the type leaves empty.
        let slot =
            unsafe { ffi::PyType_GetSlot(ffi::Py_TYPE(descr.as_ptr()), ffi::Py_tp_descr_set) };
        if slot.is_null() {
            return Ok(None);
        }
        // SAFETY: a non-NULL `Py_tp_descr_set` slot is a `descrsetfunc`.
        let setter: ffi::descrsetfunc = unsafe { std::mem::transmute(slot) };
        return Ok(Some((descr.unbind(), setter)));
    }
    Ok(None)
}
