//! Python values as checkpoint JSON, in one pass over the objects (the forms are in
//! `crate::graph::tagged`).
//!
//! The encoder is a [`Serialize`] of the Python object, so the one walk writes either
//! JSON text straight from the objects (by [`Text`]; [`encode_pieces`]: what snapshots
//! and the state cache keep, in pieces that share a large container's text wherever it
//! is met again; [`encode_text`]: one string), with no tree of values built, copied and
//! dropped on the way (that tree was most of the time of a checkpoint of a large
//! state), or a `serde_json::Value` ([`encode`]: what a checkpoint's writes hold).
//!
//! Exact `dict`, `list`, `str`, `int`, `float`, `bool` and `None` are read through the
//! C API with no Python call; a message is serialised from the Rust value it wraps.
//! Only an enum, dataclass, pydantic model or `Send` costs a Python call (its value,
//! its fields, `model_dump(mode="json")`), once per object, not per element.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::ptr;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBytes, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString, PyTuple, PyType,
};
use pyo3::{ffi, intern};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::Value;

use super::super::messages::PyMessage;
use super::rope::{self, Out, Written};
use super::text::Text;
use crate::checkpoint::Piece;
use crate::graph::tagged::{self, is_reserved_key, MESSAGE_KEY, TYPE_KEY};

/// A typed value's fields, by name, in the order its typed form lists them.
type FieldList<'py> = Vec<(String, Bound<'py, PyAny>)>;

/// How deep a value may nest, counting the JSON containers of its tagged forms: below
/// serde_json's limit of 128 for reading text back, with room for the record around
/// it. Deeper (or self-containing) values are refused instead of overflowing the stack.
pub const MAX_DEPTH: usize = 120;

/// The Python objects the encoder tests against, looked up once.
struct Kinds {
    enum_type: Py<PyAny>,
    fields: Py<PyAny>,
}

static KINDS: PyOnceLock<Kinds> = PyOnceLock::new();

fn kinds(py: Python<'_>) -> PyResult<&'static Kinds> {
    KINDS.get_or_try_init(py, || {
        Ok(Kinds {
            enum_type: py.import("enum")?.getattr("Enum")?.unbind(),
            fields: py.import("dataclasses")?.getattr("fields")?.unbind(),
        })
    })
}

/// Why a value could not be encoded, and where in it (innermost segment first).
struct Failure {
    reason: String,
    path: Vec<String>,
}

impl Failure {
    fn new(reason: impl Into<String>) -> Self {
        Failure {
            reason: reason.into(),
            path: Vec::new(),
        }
    }
}

impl From<PyErr> for Failure {
    fn from(e: PyErr) -> Self {
        Failure::new(super::super::exiting::attach(|py| e.value(py).to_string()))
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)?;
        if !self.path.is_empty() {
            f.write_str(" (at value")?;
            for s in self.path.iter().rev() {
                f.write_str(s)?;
            }
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// `obj` as checkpoint JSON, or why it has none (naming the type and where it is).
pub fn encode(obj: &Bound<'_, PyAny>) -> Result<Value, String> {
    run(obj.py(), None, |walk| {
        serde_json::to_value(walk.node(obj, 0))
    })
}

/// `obj` as checkpoint JSON text: [`encode`] written straight to text, with no tree. A
/// large dict or list met again (a state holding one document in many places) is
/// copied from the text written for it the first time instead of walked again. The
/// text comes in the buffers it was written to (one, unless it is over a megabyte),
/// for the caller to join where it puts it: joined here, it would be copied twice.
pub fn encode_text(obj: &Bound<'_, PyAny>) -> Result<Vec<Piece>, String> {
    written(obj, Out::new(false)).map(Out::into_pieces)
}

/// [`encode_text`] in pieces ([`super::rope`]'s): a large dict or list met again is the piece
/// written for it the first time, shared, not a copy. What a snapshot keeps.
pub fn encode_pieces(obj: &Bound<'_, PyAny>) -> Result<Vec<Piece>, String> {
    written(obj, Out::new(true)).map(Out::into_pieces)
}

/// `out` after a walk of `obj` wrote its text to it.
fn written(obj: &Bound<'_, PyAny>, out: Out) -> Result<Out, String> {
    run(obj.py(), Some(out.clone()), |walk| {
        walk.node(obj, 0).serialize(&mut Text::new(out.clone()))
    })?;
    Ok(out)
}

/// Runs `write` over a walk of the value, `out` its text when it is text. The first
/// walk writes each dict as an object in one pass over it, and reads the leaves of
/// dicts and lists borrowed (see [`Leaf`]); a key that needs the escaped form
/// (reserved, or not plain text: rare) or a str that is not UTF-8 stops it, and the
/// value is walked again carefully: each dict's keys looked at before it is written,
/// every item held (writing such a str runs Python code, which could free what is
/// only borrowed).
fn run<T>(
    py: Python<'_>,
    out: Option<Out>,
    write: impl Fn(&Walk) -> serde_json::Result<T>,
) -> Result<T, String> {
    let walk = Walk::new(py, out.clone(), false)?;
    let first = write(&walk);
    if !walk.escape_seen.get() {
        return walk.result(first);
    }
    if let Some(out) = &out {
        out.clear();
    }
    let walk = Walk::new(py, out, true)?;
    let again = write(&walk);
    walk.result(again)
}

/// Containers holding fewer values (counted all the way down, a repeat counting one),
/// and whose text is shorter than [`rope::PIECE_MIN`], are walked again when met
/// again: remembering them would cost more than it saves. Counted down, not by their
/// own items: a few items can hold much (LangGraph's `wide_state` repeats an 8 KB dict
/// of 5 items 1,689 times; its `pydantic_state` copies each message dict, of 3 items,
/// but shares the 3 dicts of 75 values inside, met ~18,000 times a checkpoint).
const SHARED_MIN_VALUES: usize = 16;

/// Where the text of a container written once is, and how deep it nests below it.
struct Seen {
    /// Held so that no other object takes its address while the encoding runs.
    _obj: Py<PyAny>,
    at: Written,
    height: usize,
}

/// Whether a container's text is an object or an array.
#[derive(Clone, Copy)]
enum Brackets {
    Object,
    Array,
}

/// One encoding: the failure that stopped it, when one did. A serializer's error is
/// opaque, so the failure is kept here and each container it unwinds through adds its
/// segment of the path (nothing is formatted on the way down).
struct Walk {
    kinds: &'static Kinds,
    failure: RefCell<Option<Failure>>,
    /// The text being written, when it is text.
    out: Option<Out>,
    /// The large containers written so far, by address (hashed with foldhash: the
    /// default SipHash was ~2 % of a wide state's checkpoint).
    written: RefCell<HashMap<usize, Seen, foldhash::fast::RandomState>>,
    /// The deepest container depth reached so far.
    deepest: Cell<usize>,
    /// How many values were walked so far (a container's cost to walk again is the
    /// count it adds, see [`SHARED_MIN_VALUES`]).
    walked: Cell<usize>,
    /// Whether each dict's keys are looked at before it is written (see [`run`]).
    careful: bool,
    /// Whether a walk that was not careful stopped at what only a careful one writes:
    /// a dict that needs the escaped form, or a str that is not UTF-8 read borrowed.
    escape_seen: Cell<bool>,
}

/// A Python object to serialise, `depth` containers deep.
struct Node<'a, 'py> {
    walk: &'a Walk,
    obj: &'a Bound<'py, PyAny>,
    depth: usize,
}

impl Serialize for Node<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.walk.value(self.obj, self.depth, s)
    }
}

impl Walk {
    fn new(py: Python<'_>, out: Option<Out>, careful: bool) -> Result<Walk, String> {
        Ok(Walk {
            kinds: kinds(py).map_err(|e| e.to_string())?,
            failure: RefCell::new(None),
            out,
            written: RefCell::new(HashMap::default()),
            deepest: Cell::new(0),
            walked: Cell::new(0),
            careful,
            escape_seen: Cell::new(false),
        })
    }

    /// A dict or list (`obj`, `len` items, `depth` deep), written by `write`, or copied
    /// from its text when it was written before and the copy nests no deeper than a
    /// walk would allow. The serializer ([`Text`]) writes a token as soon as it is given
    /// one, so the text of `obj` starts where the output ends when it is reached, and an
    /// object begun and ended with the copied entries in between is the same text.
    fn shared<S: Serializer>(
        &self,
        obj: &Bound<'_, PyAny>,
        (len, brackets): (usize, Brackets),
        depth: usize,
        s: S,
        write: impl FnOnce(S) -> Result<S::Ok, S::Error>,
    ) -> Result<S::Ok, S::Error> {
        // A container only its parent holds (and the walk's own reference to it) is met
        // once: nothing to remember it by.
        // SAFETY: `obj` is a live object (the walk holds a reference to it).
        let unique = unsafe { pyo3::ffi::Py_REFCNT(obj.as_ptr()) } <= 2;
        let Some(out) = self.out.as_ref().filter(|_| len > 0 && !unique) else {
            return write(s);
        };
        let key = obj.as_ptr() as usize;
        {
            let mut written = self.written.borrow_mut();
            let seen = written
                .get_mut(&key)
                .filter(|w| depth + w.height + 2 < MAX_DEPTH && out.can_repeat(&w.at));
            if let Some(w) = seen {
                if let Some(at) = out.promoted(&w.at) {
                    w.at = at;
                }
                self.deepest.set(self.deepest.get().max(depth + w.height));
                return match brackets {
                    Brackets::Object => {
                        let map = s.serialize_map(None)?;
                        out.repeat(&w.at);
                        map.end()
                    }
                    Brackets::Array => {
                        let seq = s.serialize_seq(None)?;
                        out.repeat(&w.at);
                        seq.end()
                    }
                };
            }
        }
        let start = out.pos();
        let outer = self.deepest.replace(depth);
        let walked = self.walked.get();
        let done = write(s)?;
        let inner = self.deepest.get();
        self.deepest.set(outer.max(inner));
        let end = out.pos();
        if self.walked.get() - walked >= SHARED_MIN_VALUES || end - start >= rope::PIECE_MIN {
            let w = Seen {
                _obj: obj.clone().unbind(),
                at: out.written(start, end),
                height: inner - depth,
            };
            self.written.borrow_mut().insert(key, w);
        }
        Ok(done)
    }

    fn node<'a, 'py>(&'a self, obj: &'a Bound<'py, PyAny>, depth: usize) -> Node<'a, 'py> {
        Node {
            walk: self,
            obj,
            depth,
        }
    }

    /// The outcome of a serialisation: the kept failure explains its error.
    fn result<T>(&self, out: serde_json::Result<T>) -> Result<T, String> {
        out.map_err(|e| match self.failure.borrow_mut().take() {
            Some(f) => f.to_string(),
            None => e.to_string(),
        })
    }

    /// Keeps `f` as the reason the encoding stops; the error to unwind with.
    fn fail<E: serde::ser::Error, F: Into<Failure>>(&self, f: F) -> E {
        *self.failure.borrow_mut() = Some(f.into());
        E::custom("checkpoint encoding failed")
    }

    /// Adds `segment` to the path of the kept failure as `e` unwinds through a container.
    fn at<E>(&self, e: E, segment: impl FnOnce() -> String) -> E {
        if let Some(f) = self.failure.borrow_mut().as_mut() {
            f.path.push(segment());
        }
        e
    }

    fn value<S: Serializer>(
        &self,
        obj: &Bound<'_, PyAny>,
        depth: usize,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        self.walked.set(self.walked.get() + 1);
        match leaf(obj) {
            // `obj` is held (only a dict's or list's items are read borrowed).
            Some(Leaf::NotUtf8) => {
                // SAFETY: only an exact `str` is `NotUtf8`.
                return self.string(unsafe { obj.cast_unchecked::<PyString>() }, s);
            }
            Some(l) => return l.serialize(s),
            None => {}
        }
        // Past 64 bits.
        if let Ok(i) = obj.cast_exact::<PyInt>() {
            return self.int(i, s);
        }
        // Past here `obj` is a container: one level more.
        if depth >= MAX_DEPTH {
            return Err(self.fail(Failure::new(format!(
                "it nests deeper than {MAX_DEPTH} levels (or contains itself)"
            ))));
        }
        self.deepest.set(self.deepest.get().max(depth));
        if let Ok(d) = obj.cast_exact::<PyDict>() {
            let shape = (d.len(), Brackets::Object);
            return self.shared(obj, shape, depth, s, |s| self.dict(d, depth + 1, s));
        }
        if let Ok(l) = obj.cast_exact::<PyList>() {
            let shape = (l.len(), Brackets::Array);
            return self.shared(obj, shape, depth, s, |s| self.list(l, depth + 1, s));
        }
        if let Ok(m) = obj.cast::<PyMessage>() {
            return message(&m.borrow().inner, s);
        }
        // A langchain-core message (the classes Python code sees when it is installed)
        // is read as the message it is, not as a pydantic model: it loads back as a
        // message, whatever the graph's allowlist.
        if let Some(lc) = super::super::lc_messages::active() {
            if lc
                .is_message(obj)
                .map_err(|e| self.fail::<S::Error, _>(e))?
            {
                let m = super::super::coerce::message_from_py(obj)
                    .map_err(|e| self.fail::<S::Error, _>(e))?;
                return message(&m, s);
            }
        }
        // A tagged form is two levels: its object and the array of items.
        let kind = if obj.cast_exact::<PyTuple>().is_ok() {
            Some("tuple")
        } else if obj.cast_exact::<PySet>().is_ok() {
            Some("set")
        } else if obj.cast_exact::<PyFrozenSet>().is_ok() {
            Some("frozenset")
        } else {
            None
        };
        if let Some(kind) = kind {
            let items = Items {
                walk: self,
                obj,
                depth: depth + 2,
            };
            return tagged_form(s, kind, "items", &items);
        }
        self.object(obj, depth, s)
    }

    fn items<'py, S: Serializer>(
        &self,
        items: impl Iterator<Item = Bound<'py, PyAny>>,
        len: usize,
        depth: usize,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(len))?;
        for (i, v) in items.enumerate() {
            seq.serialize_element(&self.node(&v, depth))
                .map_err(|e| self.at(e, || format!("[{i}]")))?;
        }
        seq.end()
    }

    /// A dict: an object, or the escaped form when a key is reserved or not plain
    /// text (lone surrogates). A careful walk looks at its keys first, as the form is
    /// chosen before anything is written; any other walk writes the object in one pass
    /// and stops at such a key (see [`run`]).
    fn dict<S: Serializer>(
        &self,
        d: &Bound<'_, PyDict>,
        depth: usize,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        if self.careful {
            return self.dict_careful(d, depth, s);
        }
        let (py, len) = (d.py(), d.len());
        let mut map = s.serialize_map(Some(len))?;
        let (mut pos, mut k, mut v) = (0, ptr::null_mut(), ptr::null_mut());
        // SAFETY: `d` is a live dict; `PyDict_Next` checks `pos` against it as it is now.
        while unsafe { ffi::PyDict_Next(d.as_ptr(), &mut pos, &mut k, &mut v) } != 0 {
            // SAFETY: references `d` holds; they stay alive while no Python code runs,
            // and before any may run (a value that is not a leaf) they are held.
            let (k, v) = unsafe { (Borrowed::from_ptr(py, k), Borrowed::from_ptr(py, v)) };
            let (k, v): (&Bound<'_, PyAny>, &Bound<'_, PyAny>) = (&k, &v);
            let key = match k.cast::<PyString>() {
                Ok(k) => k.to_str().ok().filter(|t| !is_reserved_key(t)),
                Err(_) => return Err(self.fail(key_refused(&k.clone()))),
            };
            let Some(key) = key else {
                return Err(self.again("a dict needs the escaped form"));
            };
            match leaf(v) {
                Some(Leaf::NotUtf8) => return Err(self.again("a str is not UTF-8")),
                Some(l) => {
                    self.walked.set(self.walked.get() + 1);
                    map.serialize_entry(key, &l)?;
                }
                None => {
                    let (k, v) = (k.clone(), v.clone());
                    map.serialize_key(key)?;
                    map.serialize_value(&self.node(&v, depth))
                        .map_err(|e| self.at(e, || key_segment(&k)))?;
                    if d.len() != len {
                        return Err(self.fail(changed("dict")));
                    }
                }
            }
        }
        map.end()
    }

    /// A list's items. Read borrowed from the list, as [`Walk::dict`] reads a dict's,
    /// unless the walk is careful (which holds every item, as it may run Python code
    /// on a str that is not UTF-8).
    fn list<S: Serializer>(
        &self,
        l: &Bound<'_, PyList>,
        depth: usize,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        if self.careful {
            return self.items(l.iter(), l.len(), depth, s);
        }
        let (py, len) = (l.py(), l.len());
        let mut seq = s.serialize_seq(Some(len))?;
        for i in 0..len {
            if l.len() != len {
                return Err(self.fail(changed("list")));
            }
            // SAFETY: `i` is in range (checked just above, with no Python code run
            // since), so the item is a reference the list holds: alive while no Python
            // code runs, and held before any may (an item that is not a leaf).
            let v = unsafe { Borrowed::from_ptr(py, ffi::PyList_GetItem(l.as_ptr(), i as isize)) };
            let v: &Bound<'_, PyAny> = &v;
            match leaf(v) {
                Some(Leaf::NotUtf8) => return Err(self.again("a str is not UTF-8")),
                Some(x) => {
                    self.walked.set(self.walked.get() + 1);
                    seq.serialize_element(&x)?;
                }
                None => seq
                    .serialize_element(&self.node(&v.clone(), depth))
                    .map_err(|e| self.at(e, || format!("[{i}]")))?,
            }
        }
        seq.end()
    }

    /// Stops a walk that is not careful, to walk the value again carefully (see
    /// [`run`]): `why` is never shown.
    fn again<E: serde::ser::Error>(&self, why: &str) -> E {
        self.escape_seen.set(true);
        E::custom(why)
    }

    /// [`Walk::dict`] of a careful walk: the keys first, then the object or the
    /// escaped form.
    fn dict_careful<S: Serializer>(
        &self,
        d: &Bound<'_, PyDict>,
        depth: usize,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut plain = true;
        for (k, _) in d.iter() {
            match k.cast::<PyString>() {
                Ok(k) => match k.to_str() {
                    Ok(t) if !is_reserved_key(t) => {}
                    _ => plain = false,
                },
                Err(_) => return Err(self.fail(key_refused(&k))),
            }
        }
        if !plain {
            let pairs = Pairs {
                walk: self,
                dict: d,
                depth: depth + 2,
            };
            return tagged_form(s, "dict", "items", &pairs);
        }
        let mut map = s.serialize_map(Some(d.len()))?;
        for (k, v) in d.iter() {
            let Ok(key) = k
                .cast::<PyString>()
                .map_err(PyErr::from)
                .and_then(|k| k.to_str())
            else {
                // Changed while it was written (a key added by another thread).
                return Err(self.fail(changed("dict")));
            };
            map.serialize_key(key)?;
            map.serialize_value(&self.node(&v, depth))
                .map_err(|e| self.at(e, || key_segment(&k)))?;
        }
        map.end()
    }

    /// What is neither plain data nor a built-in collection: an enum, a dataclass, a
    /// pydantic model (typed, by name), or a dict / list subclass (as plain data).
    fn object<S: Serializer>(
        &self,
        obj: &Bound<'_, PyAny>,
        depth: usize,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let py = obj.py();
        let ty = obj.get_type();
        let py_err = |e: PyErr| self.fail::<S::Error, _>(e);
        if let Some(send) = self.send_fields(obj).map_err(py_err)? {
            let path = type_path(&ty).map_err(py_err)?;
            let fields = Fields {
                walk: self,
                fields: send,
                depth: depth + 2,
            };
            return tagged_form(s, &path, "value", &fields);
        }
        if obj
            .is_instance(self.kinds.enum_type.bind(py))
            .map_err(py_err)?
        {
            let v = obj.getattr(intern!(py, "value")).map_err(py_err)?;
            let path = type_path(&ty).map_err(py_err)?;
            return tagged_form(s, &path, "value", &self.node(&v, depth + 1));
        }
        let dataclass = ty
            .hasattr(intern!(py, "__dataclass_fields__"))
            .map_err(py_err)?;
        if dataclass && !obj.is_instance_of::<PyType>() {
            let path = type_path(&ty).map_err(py_err)?;
            let fields = Fields {
                walk: self,
                fields: self.dataclass_fields(obj).map_err(py_err)?,
                depth: depth + 2,
            };
            return tagged_form(s, &path, "value", &fields);
        }
        if ty.hasattr(intern!(py, "model_validate")).map_err(py_err)?
            && obj.hasattr(intern!(py, "model_dump")).map_err(py_err)?
        {
            let kw = PyDict::new(py);
            kw.set_item(intern!(py, "mode"), intern!(py, "json"))
                .map_err(py_err)?;
            let dump = obj
                .call_method(intern!(py, "model_dump"), (), Some(&kw))
                .map_err(py_err)?;
            let path = type_path(&ty).map_err(py_err)?;
            return tagged_form(s, &path, "value", &self.node(&dump, depth + 1));
        }
        if let Ok(d) = obj.cast::<PyDict>() {
            return self.dict(d, depth + 1, s);
        }
        if let Ok(l) = obj.cast::<PyList>() {
            return self.list(l, depth + 1, s);
        }
        // Subclasses of the plain scalars (a message's `.text`, a `str` wrapper) are
        // their value, as dict and list subclasses are; enums were taken above.
        if let Ok(x) = obj.cast::<PyString>() {
            return self.string(x, s);
        }
        if let Ok(i) = obj.cast::<PyInt>() {
            return self.int(i, s);
        }
        if let Ok(f) = obj.cast::<PyFloat>() {
            return float(f.value(), s);
        }
        Err(self.fail(Failure::new(format!(
            "{} is not a type a checkpoint holds: use dict, list, str, int, float, bool, \
             None, tuple, set, frozenset, messages, Send, enums, dataclasses or pydantic \
             models",
            qualified_name(&ty)
        ))))
    }

    /// A `Send`'s node and argument, as the fields of its typed form, when `obj` is
    /// one: a `Send` returned by a router is checkpointed with its step, and may be
    /// inside the argument of another (`Send("n", Command(goto=Send(...)))`).
    fn send_fields<'py>(&self, obj: &Bound<'py, PyAny>) -> PyResult<Option<FieldList<'py>>> {
        let py = obj.py();
        // Before `import ironloop` wires the helpers there is no `Send` to meet.
        let Ok(h) = super::super::helpers::helpers(py) else {
            return Ok(None);
        };
        if !obj.is_instance(h.send.bind(py))? {
            return Ok(None);
        }
        Ok(Some(vec![
            ("node".to_owned(), obj.getattr(intern!(py, "node"))?),
            ("arg".to_owned(), obj.getattr(intern!(py, "arg"))?),
        ]))
    }

    /// A dataclass's fields, by name, in their order.
    fn dataclass_fields<'py>(&self, obj: &Bound<'py, PyAny>) -> PyResult<FieldList<'py>> {
        let py = obj.py();
        let mut out = Vec::new();
        for f in self.kinds.fields.bind(py).call1((obj,))?.try_iter()? {
            let name: String = f?.getattr(intern!(py, "name"))?.extract()?;
            let v = obj.getattr(name.as_str())?;
            out.push((name, v));
        }
        Ok(out)
    }

    /// A string: JSON text, or (lone surrogates in it) the tagged form keeping them.
    fn string<S: Serializer>(&self, x: &Bound<'_, PyString>, s: S) -> Result<S::Ok, S::Error> {
        if let Ok(t) = x.to_str() {
            return s.serialize_str(t);
        }
        let py = x.py();
        let pieces = x
            .call_method1(intern!(py, "encode"), ("utf-8", "surrogatepass"))
            .and_then(|b| Ok(tagged::wtf8_pieces(b.cast::<PyBytes>()?.as_bytes())))
            .map_err(|e| self.fail::<S::Error, _>(e))?
            .ok_or_else(|| {
                self.fail::<S::Error, _>(Failure::new("a str that Python could not encode"))
            })?;
        tagged::str_form(&pieces).serialize(s)
    }

    /// An int: a JSON number when it fits in 64 bits, else the tagged hexadecimal form.
    fn int<S: Serializer>(&self, i: &Bound<'_, PyInt>, s: S) -> Result<S::Ok, S::Error> {
        if let Ok(v) = i.extract::<i64>() {
            return s.serialize_i64(v);
        }
        if let Ok(v) = i.extract::<u64>() {
            return s.serialize_u64(v);
        }
        let py = i.py();
        let hex: String = py
            .import(intern!(py, "builtins"))
            .and_then(|b| b.call_method1(intern!(py, "hex"), (i,))?.extract())
            .map_err(|e| self.fail::<S::Error, _>(e))?;
        tagged_form(s, "int", "value", &hex)
    }
}

/// A value written with no Python code run: read borrowed from its container, it needs
/// no reference of its own (the walk's increments and decrements of every item's
/// count were a tenth of encoding a large dict, and wrote to every object it read).
enum Leaf<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'a str),
    /// A str with lone surrogates: its tagged form is made by Python, so only a careful
    /// walk writes it (see [`run`]).
    NotUtf8,
}

/// `obj` as a [`Leaf`] when it is one: exactly a `None`, `bool`, `float`, 64-bit
/// `int` or `str` (subclasses may run Python code when read).
fn leaf<'a>(obj: &'a Bound<'_, PyAny>) -> Option<Leaf<'a>> {
    let p = obj.as_ptr();
    // SAFETY: `p` is a live object; the type objects are CPython's own statics.
    unsafe {
        let ty = ffi::Py_TYPE(p);
        if ty == ptr::addr_of_mut!(ffi::PyUnicode_Type) {
            let x = obj.cast_unchecked::<PyString>();
            return Some(x.to_str().map_or(Leaf::NotUtf8, Leaf::Str));
        }
        if ty == ptr::addr_of_mut!(ffi::PyLong_Type) {
            let mut overflow = 0;
            let v = ffi::PyLong_AsLongLongAndOverflow(p, &mut overflow);
            // An exact int raises nothing here; past 64 bits `overflow` says so.
            return (overflow == 0).then_some(Leaf::Int(v));
        }
        if ty == ptr::addr_of_mut!(ffi::PyFloat_Type) {
            return Some(Leaf::Float(ffi::PyFloat_AsDouble(p)));
        }
        if ty == ptr::addr_of_mut!(ffi::PyBool_Type) {
            return Some(Leaf::Bool(p == ffi::Py_True()));
        }
        (p == ffi::Py_None()).then_some(Leaf::Null)
    }
}

impl Serialize for Leaf<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Leaf::Null => s.serialize_unit(),
            Leaf::Bool(b) => s.serialize_bool(b),
            Leaf::Int(i) => s.serialize_i64(i),
            Leaf::Float(f) => float(f, s),
            Leaf::Str(t) => s.serialize_str(t),
            Leaf::NotUtf8 => Err(serde::ser::Error::custom("a str that is not UTF-8")),
        }
    }
}

fn changed(what: &str) -> Failure {
    Failure::new(format!("the {what} changed while it was checkpointed"))
}

/// The items of a tuple, set or frozenset, as a JSON array.
struct Items<'a, 'py> {
    walk: &'a Walk,
    obj: &'a Bound<'py, PyAny>,
    depth: usize,
}

impl Serialize for Items<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (w, obj) = (self.walk, self.obj);
        if let Ok(t) = obj.cast::<PyTuple>() {
            return w.items(t.iter(), t.len(), self.depth, s);
        }
        if let Ok(x) = obj.cast::<PySet>() {
            return w.items(x.iter(), x.len(), self.depth, s);
        }
        match obj.cast::<PyFrozenSet>() {
            Ok(x) => w.items(x.iter(), x.len(), self.depth, s),
            Err(e) => Err(w.fail(PyErr::from(e))),
        }
    }
}

/// A dict in its escaped form: `[key, value]` pairs, keys in their JSON form.
struct Pairs<'a, 'py> {
    walk: &'a Walk,
    dict: &'a Bound<'py, PyDict>,
    depth: usize,
}

impl Serialize for Pairs<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let w = self.walk;
        let mut seq = s.serialize_seq(Some(self.dict.len()))?;
        for (k, v) in self.dict.iter() {
            let Ok(key) = k.cast::<PyString>() else {
                return Err(w.fail(key_refused(&k)));
            };
            let pair = Pair {
                walk: w,
                key,
                value: w.node(&v, self.depth),
            };
            seq.serialize_element(&pair)
                .map_err(|e| w.at(e, || key_segment(&k)))?;
        }
        seq.end()
    }
}

/// One `[key, value]` pair of an escaped dict.
struct Pair<'a, 'py> {
    walk: &'a Walk,
    key: &'a Bound<'py, PyString>,
    value: Node<'a, 'py>,
}

impl Serialize for Pair<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(2))?;
        seq.serialize_element(&Key(self.walk, self.key))?;
        seq.serialize_element(&self.value)?;
        seq.end()
    }
}

/// A dict key in an escaped dict: its string form.
struct Key<'a, 'py>(&'a Walk, &'a Bound<'py, PyString>);

impl Serialize for Key<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.string(self.1, s)
    }
}

/// A dataclass's fields: an object, escaped as a dict is when a name is reserved.
struct Fields<'a, 'py> {
    walk: &'a Walk,
    fields: FieldList<'py>,
    depth: usize,
}

impl Serialize for Fields<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let w = self.walk;
        if self.fields.iter().any(|(k, _)| is_reserved_key(k)) {
            return tagged_form(s, "dict", "items", &FieldPairs(self));
        }
        let mut map = s.serialize_map(Some(self.fields.len()))?;
        for (name, v) in &self.fields {
            map.serialize_key(name)?;
            map.serialize_value(&w.node(v, self.depth))
                .map_err(|e| w.at(e, || format!(".{name}")))?;
        }
        map.end()
    }
}

/// A dataclass's fields as the `[name, value]` pairs of an escaped dict.
struct FieldPairs<'a, 'b, 'py>(&'b Fields<'a, 'py>);

impl Serialize for FieldPairs<'_, '_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let f = self.0;
        let mut seq = s.serialize_seq(Some(f.fields.len()))?;
        for (name, v) in &f.fields {
            seq.serialize_element(&(name, f.walk.node(v, f.depth)))
                .map_err(|e| f.walk.at(e, || format!(".{name}")))?;
        }
        seq.end()
    }
}

/// The tagged form `{TYPE_KEY: kind, field: value}` (as [`tagged::tagged`] builds it).
fn tagged_form<S: Serializer, V: Serialize + ?Sized>(
    s: S,
    kind: &str,
    field: &str,
    value: &V,
) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(2))?;
    map.serialize_entry(TYPE_KEY, kind)?;
    map.serialize_entry(field, value)?;
    map.end()
}

fn key_refused(k: &Bound<'_, PyAny>) -> Failure {
    Failure::new(format!(
        "dict keys must be str to be checkpointed, got a {} key {}",
        qualified_name(&k.get_type()),
        k.repr().map(|r| r.to_string()).unwrap_or_default()
    ))
}

fn key_segment(k: &Bound<'_, PyAny>) -> String {
    format!("[{}]", k.repr().map(|r| r.to_string()).unwrap_or_default())
}

/// `module:qualname`, the name a typed value is stored under.
fn type_path(ty: &Bound<'_, PyType>) -> PyResult<String> {
    Ok(format!("{}:{}", ty.module()?, ty.qualname()?))
}

fn qualified_name(ty: &Bound<'_, PyType>) -> String {
    ty.fully_qualified_name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// A message in its checkpoint form, `{MESSAGE_KEY: its JSON}`.
fn message<S: Serializer>(m: &crate::message::Message, s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(1))?;
    map.serialize_entry(MESSAGE_KEY, m)?;
    map.end()
}

/// A float: a JSON number, or its tagged form when JSON has none (NaN, ±Infinity).
fn float<S: Serializer>(f: f64, s: S) -> Result<S::Ok, S::Error> {
    if f.is_finite() {
        s.serialize_f64(f)
    } else {
        tagged::float(f).serialize(s)
    }
}
