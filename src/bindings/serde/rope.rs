//! The text an encoding writes: one string, or (a snapshot's) pieces in which a large
//! container met again is the piece written the first time, shared instead of copied.
//!
//! The serializer ([`super::text`]) writes each token to [`Out`] as soon as it is
//! given one, so a container's text runs from where the output ended when the walk
//! reached it to where it ends when the walk leaves it. A large one is then cut out of
//! the open buffer as a piece of its own: `bytes` slices the buffer without copying
//! it, so the first occurrence costs no copy either, and every later occurrence is a
//! pointer to it. (Copying them was most of the checkpoint of a state holding one
//! document in many places: LangGraph's `wide_state` benchmarks wrote 16.7 MB of
//! copies a run.)

use std::cell::{Cell, RefCell, RefMut};
use std::ptr;
use std::rc::Rc;

use bytes::{Bytes, BytesMut};

use crate::checkpoint::Piece;

/// Containers whose text is shorter stay in the text around them: a piece of their
/// own would cost more (a pointer, a count, a cut) than copying them again.
pub(super) const PIECE_MIN: usize = 1024;

/// A container whose text is shorter than [`PIECE_MIN`] but at least this long becomes
/// a piece when it is met again (see [`Out::promoted`]), not when it is written: a
/// copy costs more than its `memcpy`, as a snapshot is kept and every byte copied is
/// fresh memory faulted in (~0.8 ns a byte here, against ~80 bytes and a few atomics
/// for a repeat as pieces). LangGraph's `pydantic_state_9x1200` repeats 900-byte
/// dicts ~18,000 times a checkpoint: copied, 17.5 MB of text. Cut when written, every
/// such container inside a larger one met again would make each repeat of the larger
/// one more pieces (`wide_state`'s 8 KB dict holds 15 lists of ~290 bytes).
const REPEAT_PIECE_MIN: usize = 256;

/// The size past which the open buffer is not grown but continued in a new one (see
/// [`Rope::make_room`]): large enough that the pieces this makes of a large text are
/// few, and that a container rarely straddles two (one that does is walked again when
/// met again, instead of copied).
const CHUNK: usize = 1 << 20;

/// Where the text of a container written once is, to write it again.
pub(super) enum Written {
    /// Bytes `start..end` of the output (brackets included): copied from the open
    /// buffer while they are still in it.
    Span { start: usize, end: usize },
    /// Its text between the brackets, as pieces of their own.
    Pieces(Rc<[Piece]>),
}

#[derive(Default)]
struct Rope {
    /// The text before `buf`.
    done: Vec<Piece>,
    /// Where each piece of `done` starts in the text (to copy a span from it).
    starts: Vec<usize>,
    /// The bytes of `done`.
    done_len: usize,
    /// The text being written.
    buf: BytesMut,
    /// Whether large containers become pieces of their own.
    cuts: bool,
}

impl Rope {
    /// Moves `bytes` (UTF-8 cut between two writes: see [`Out::cut`] and
    /// [`Rope::make_room`]) to the end of `done`.
    fn push(&mut self, bytes: BytesMut) {
        if bytes.is_empty() {
            return;
        }
        // SAFETY: the serializer writes UTF-8 a whole token (or string) at a time, and
        // the output is cut only between two writes (a container's cuts fall on its
        // brackets, a full buffer's after its last write), so every slice is UTF-8.
        self.push_piece(unsafe { Piece::from_utf8_unchecked(bytes.freeze()) });
    }

    /// Makes room for a write of `n` bytes. A buffer past [`CHUNK`] bytes is not grown
    /// but moved to `done` whole and a new one begun: growing it would copy all it holds
    /// (`realloc` of a large block, into fresh memory), and did once per doubling — the
    /// text of a 10 MB value was copied twice over before it was done.
    #[cold]
    #[inline(never)]
    fn make_room(&mut self, n: usize) {
        if self.buf.len() < CHUNK {
            return self.buf.reserve(n);
        }
        let full = std::mem::replace(&mut self.buf, BytesMut::with_capacity(CHUNK.max(n)));
        self.push(full);
    }

    fn push_piece(&mut self, piece: Piece) {
        self.starts.push(self.done_len);
        self.done_len += piece.len();
        self.done.push(piece);
    }

    /// Bytes `a..b` of `done`, when one piece holds them all (always, for a container
    /// shorter than [`PIECE_MIN`]: every cut falls inside a larger one).
    fn done_span(&self, a: usize, b: usize) -> Option<&[u8]> {
        span_in(&self.done, &self.starts, a, b)
    }

    /// The index of the piece of `done` that starts at `at`, splitting the one around
    /// it (an O(1) slice). `None` if `at` is not a char boundary there (never, as cuts
    /// are made).
    fn split_done_at(&mut self, at: usize) -> Option<usize> {
        let (mut i, mut start) = (self.done.len(), self.done_len);
        while start > at {
            i -= 1;
            start -= self.done[i].len();
        }
        if start == at {
            return Some(i);
        }
        let tail = self.done[i].split_off(at - start)?;
        self.done.insert(i + 1, tail);
        self.starts.insert(i + 1, at);
        Some(i + 1)
    }
}

/// Bytes `a..b` of the text of `pieces` (starting at `starts`), when one piece holds
/// them all.
fn span_in<'a>(pieces: &'a [Piece], starts: &[usize], a: usize, b: usize) -> Option<&'a [u8]> {
    let i = starts.partition_point(|&s| s <= a).checked_sub(1)?;
    pieces[i].as_bytes().get(a - starts[i]..b - starts[i])
}

/// The output of one encoding, shared by the serializer (which writes each token to
/// it, see [`super::text`]) and the walk (which cuts and repeats containers).
#[derive(Clone, Default)]
pub(super) struct Out(Rc<Shared>);

#[derive(Default)]
struct Shared {
    rope: RefCell<Rope>,
    /// A comma is owed before the next token: the serializer notes it between two
    /// items and the item's first token writes it, so each token is one append.
    comma: Cell<bool>,
}

impl Out {
    /// An output in pieces (`cuts`: large containers their own) or as one text.
    pub fn new(cuts: bool) -> Self {
        Out(Rc::new(Shared {
            rope: RefCell::new(Rope {
                cuts,
                ..Rope::default()
            }),
            comma: Cell::new(false),
        }))
    }

    fn rope(&self) -> RefMut<'_, Rope> {
        self.0.rope.borrow_mut()
    }

    /// Notes that a comma comes before the next token (the next item of a container).
    #[inline]
    pub fn owe_comma(&self) {
        self.0.comma.set(true);
    }

    /// Writes `b`, after the comma owed if one is.
    #[inline]
    pub fn emit(&self, b: &[u8]) {
        let mut r = self.rope();
        if self.0.comma.replace(false) {
            append(&mut r, b",");
        }
        append(&mut r, b);
    }

    /// Writes `text` (a string with nothing to escape) between quotes, and a colon
    /// after it when it is a key, after the comma owed if one is: room made once for
    /// all of it, then the bytes stored.
    #[inline]
    pub fn emit_plain_string(&self, text: &[u8], colon: bool) {
        let mut r = self.rope();
        let n = text.len();
        // The comma, two quotes and the colon around `text`.
        let room = n + 4;
        if r.buf.capacity() - r.buf.len() < room {
            r.make_room(room);
        }
        let comma = usize::from(self.0.comma.replace(false));
        let buf = &mut r.buf;
        let len = buf.len();
        let dst = buf.spare_capacity_mut().as_mut_ptr().cast::<u8>();
        // SAFETY: `room` bytes of spare capacity at `dst`, of which this writes the
        // first `comma + n + 2 + colon` (at most `n + 4`) before they are counted.
        unsafe {
            *dst = b',';
            *dst.add(comma) = b'"';
            let at = dst.add(comma + 1);
            if n <= SMALL {
                copy_small(text, at);
            } else {
                ptr::copy_nonoverlapping(text.as_ptr(), at, n);
            }
            *at.add(n) = b'"';
            *at.add(n + 1) = b':';
            buf.set_len(len + comma + n + 2 + usize::from(colon));
        }
    }

    /// How many bytes were written (the comma owed included: the next container's text
    /// starts after it).
    pub fn pos(&self) -> usize {
        let mut r = self.rope();
        if self.0.comma.replace(false) {
            append(&mut r, b",");
        }
        r.done_len + r.buf.len()
    }

    /// Forgets what was written.
    pub fn clear(&self) {
        let mut r = self.rope();
        r.done.clear();
        r.starts.clear();
        r.done_len = 0;
        r.buf.clear();
        self.0.comma.set(false);
    }

    /// Where a container whose text is bytes `start..end`, just written (its closing
    /// bracket the last byte), is kept to be written again: as pieces of its own when
    /// it is large and the output is in pieces, else where it is.
    pub fn written(&self, start: usize, end: usize) -> Written {
        if end - start >= PIECE_MIN && self.rope().cuts {
            if let Some(p) = self.cut(start + 1, end - 1) {
                return Written::Pieces(p.into());
            }
        }
        Written::Span { start, end }
    }

    /// Makes bytes `start..end` pieces of their own, `end` in the open buffer, and
    /// returns them: O(1) slices of what was written, no byte copied.
    fn cut(&self, start: usize, end: usize) -> Option<Vec<Piece>> {
        let mut r = self.rope();
        let r = &mut *r;
        let mut head = r.buf.split_to(end - r.done_len);
        if start >= r.done_len {
            let inner = head.split_off(start - r.done_len);
            r.push(head);
            let first = r.done.len();
            r.push(inner);
            return Some(r.done[first..].to_vec());
        }
        let first = r.split_done_at(start);
        r.push(head);
        Some(r.done[first?..].to_vec())
    }

    /// Whether [`Out::repeat`] can write `w` again (a span a later cut moved out of
    /// the open buffer is copied from the piece holding it; were it split, never as
    /// cuts are made, the container is walked again).
    pub fn can_repeat(&self, w: &Written) -> bool {
        let r = self.0.rope.borrow();
        match w {
            Written::Span { start, end } => {
                *start >= r.done_len || r.done_span(*start, *end).is_some()
            }
            Written::Pieces(_) => true,
        }
    }

    /// What to keep in place of `w`, met again, so that this and later repeats share
    /// its text instead of copying it: a piece of its own (copied from the output
    /// once), for a span of at least [`REPEAT_PIECE_MIN`] bytes when the output is in
    /// pieces. `None` to keep `w`.
    pub fn promoted(&self, w: &Written) -> Option<Written> {
        let r = self.0.rope.borrow();
        let Written::Span { start, end } = *w else {
            return None;
        };
        if !r.cuts || end - start < REPEAT_PIECE_MIN {
            return None;
        }
        let (a, b) = (start + 1, end - 1);
        let text = if start >= r.done_len {
            r.buf.get(a - r.done_len..b - r.done_len)?
        } else {
            span_in(&r.done, &r.starts, a, b)?
        };
        // SAFETY: the span lies between a container's brackets, cut at ASCII bytes, in
        // UTF-8 text (see `Rope::push`).
        let piece = unsafe { Piece::from_utf8_unchecked(Bytes::copy_from_slice(text)) };
        Some(Written::Pieces(Rc::from([piece])))
    }

    /// Writes the text of `w` between its brackets again (the caller writes them).
    pub fn repeat(&self, w: &Written) {
        let mut r = self.rope();
        let r = &mut *r;
        match w {
            Written::Span { start, end } if *start >= r.done_len => {
                let (a, b) = (start + 1 - r.done_len, end - 1 - r.done_len);
                r.buf.extend_from_within(a..b);
            }
            Written::Span { start, end } => {
                if let Some(text) = span_in(&r.done, &r.starts, start + 1, end - 1) {
                    r.buf.extend_from_slice(text);
                }
            }
            Written::Pieces(p) => {
                let open = r.buf.split();
                r.push(open);
                for piece in p.iter() {
                    r.push_piece(piece.clone());
                }
            }
        }
    }

    /// The text, in pieces.
    pub fn into_pieces(self) -> Vec<Piece> {
        let mut r = self.rope();
        let open = r.buf.split();
        r.push(open);
        std::mem::take(&mut r.done)
    }
}

/// Appends `b` to `buf`. Most of the text comes a few bytes at a time (a key, a
/// number, a short string): those are copied inline, by fixed-size moves, instead of
/// by a call to `memcpy` (whose calls were 11–13 % of encoding a large dict: a copy of
/// a length known only at run time is a call).
#[inline(always)]
fn append(r: &mut Rope, b: &[u8]) {
    let n = b.len();
    let room = n.max(SMALL);
    if r.buf.capacity() - r.buf.len() < room {
        r.make_room(room);
    }
    let buf = &mut r.buf;
    if n > SMALL {
        return buf.extend_from_slice(b);
    }
    let dst = buf.spare_capacity_mut().as_mut_ptr().cast::<u8>();
    // SAFETY: `make_room` left at least SMALL bytes of spare capacity at `dst`, and
    // `copy_small` writes bytes `0..n` of it (n <= SMALL) before they are counted.
    unsafe {
        copy_small(b, dst);
        buf.set_len(buf.len() + n);
    }
}

/// The longest write [`append`] copies inline.
const SMALL: usize = 16;

/// Copies `src` (at most [`SMALL`] bytes) to `dst` with two fixed-size moves from its
/// two ends, overlapping in the middle: no loop and no call.
///
/// # Safety
/// `dst` must be valid for writes of `src.len()` bytes and not overlap `src`.
#[inline(always)]
unsafe fn copy_small(src: &[u8], dst: *mut u8) {
    let (n, s) = (src.len(), src.as_ptr());
    // SAFETY: every read is within `src` and every write within `dst`'s `n` bytes.
    unsafe {
        if n >= 8 {
            ptr::copy_nonoverlapping(s, dst, 8);
            ptr::copy_nonoverlapping(s.add(n - 8), dst.add(n - 8), 8);
        } else if n >= 4 {
            ptr::copy_nonoverlapping(s, dst, 4);
            ptr::copy_nonoverlapping(s.add(n - 4), dst.add(n - 4), 4);
        } else if n > 0 {
            *dst = *s;
            *dst.add(n / 2) = *s.add(n / 2);
            *dst.add(n - 1) = *s.add(n - 1);
        }
    }
}
