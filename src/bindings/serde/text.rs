//! serde's data model as compact JSON, written straight into an [`Out`]: the
//! checkpoint encoder's serializer.
//!
//! It writes what serde_json's compact serializer writes, byte for byte (the same
//! escapes, the same shortest float digits by `zmij`, the same integers by `itoa`), for
//! less: serde_json hands an object key to its writer in five calls (comma, quote,
//! text, quote, colon) and escapes strings a byte at a time, which with the writer's
//! calls were about a third of encoding a large dict. Here every token is one append
//! (its comma, owed by the container, included), a string with nothing to escape is
//! copied whole, and one with escapes is escaped sixteen or thirty-two bytes at a time
//! by `json-escape-simd` (sonic-rs's kernels), as orjson escapes them.

use serde::ser::{self, Error as _, Impossible, Serialize};
use serde_json::Error;

use super::rope::Out;

type Result<T = ()> = std::result::Result<T, Error>;

/// The `Serializer` methods [`Text`] and [`MapKey`] write alike: every integer through
/// the type's own `int`, every float through its `float` (told whether it is finite),
/// a char, a unit variant's name and a newtype struct's value as what they hold.
macro_rules! scalars {
    () => {
        scalars!(int: serialize_i8 i8, serialize_i16 i16, serialize_i32 i32,
            serialize_i64 i64, serialize_i128 i128, serialize_u8 u8, serialize_u16 u16,
            serialize_u32 u32, serialize_u64 u64, serialize_u128 u128);
        scalars!(float: serialize_f32 f32, serialize_f64 f64);

        fn serialize_char(self, v: char) -> Result {
            self.serialize_str(v.encode_utf8(&mut [0; 4]))
        }

        fn serialize_unit_variant(
            self,
            _name: &'static str,
            _i: u32,
            variant: &'static str,
        ) -> Result {
            self.serialize_str(variant)
        }

        fn serialize_newtype_struct<T: ?Sized + Serialize>(
            self,
            _name: &'static str,
            v: &T,
        ) -> Result {
            v.serialize(self)
        }
    };
    (int: $($name:ident $t:ty),*) => {
        $(fn $name(self, v: $t) -> Result {
            self.int(v)
        })*
    };
    (float: $($name:ident $t:ty),*) => {
        $(fn $name(self, v: $t) -> Result {
            self.float(v, v.is_finite())
        })*
    };
}

/// The serializer: `&mut Text` is serde's `Serializer`.
pub(super) struct Text {
    out: Out,
    /// A string's escaped text on its way to `out` (the escaper writes to a `Vec`).
    scratch: Vec<u8>,
}

impl Text {
    pub fn new(out: Out) -> Self {
        Text {
            out,
            scratch: Vec::new(),
        }
    }

    /// `s` as a JSON string, followed by a colon when it is a key. Most strings (keys,
    /// names, ids) have nothing to escape: a scan of their bytes finds that, and they
    /// are copied between their quotes as they are.
    #[inline]
    fn string(&mut self, s: &str, colon: bool) {
        if !needs_escape(s.as_bytes()) {
            return self.out.emit_plain_string(s.as_bytes(), colon);
        }
        self.scratch.clear();
        json_escape_simd::escape_into(s, &mut self.scratch);
        if colon {
            self.scratch.push(b':');
        }
        self.out.emit(&self.scratch);
    }

    /// A number or literal as a key: `"{text}":` (`text` needs no escape).
    fn quoted_key(&mut self, text: &str) {
        self.scratch.clear();
        self.scratch.push(b'"');
        self.scratch.extend_from_slice(text.as_bytes());
        self.scratch.extend_from_slice(b"\":");
        self.out.emit(&self.scratch);
    }

    fn compound(&mut self, open: &'static [u8], close: &'static [u8]) -> Compound<'_> {
        self.out.emit(open);
        Compound {
            text: self,
            first: true,
            close,
        }
    }

    /// `{"variant":`, which an enum variant's value follows (and `}` closes).
    fn variant(&mut self, variant: &str) {
        self.out.emit(b"{");
        self.string(variant, true);
    }

    fn int(&mut self, v: impl itoa::Integer) -> Result {
        self.out.emit(itoa::Buffer::new().format(v).as_bytes());
        Ok(())
    }

    /// A float as serde_json writes it: its shortest digits, `null` when not finite.
    fn float(&mut self, v: impl zmij::Float, finite: bool) -> Result {
        if finite {
            self.out
                .emit(zmij::Buffer::new().format_finite(v).as_bytes());
        } else {
            self.out.emit(b"null");
        }
        Ok(())
    }
}

/// Whether `s` holds a byte JSON escapes (a control byte, `"` or `\\`). Up to 16
/// bytes (most keys and short strings), eight at a time in a register, read as two
/// overlapping words (a byte read twice is tested twice); longer, a scan with no early
/// exit, which vectorises. The byte-at-a-time scan of a short string was most of the
/// cost of writing it.
#[inline(always)]
fn needs_escape(s: &[u8]) -> bool {
    let n = s.len();
    if n > 16 {
        return s.iter().fold(false, |any, &c| {
            any | (c < 0x20) | (c == b'"') | (c == b'\\')
        });
    }
    let word = |at: usize| u64::from_le_bytes(s[at..at + 8].try_into().unwrap_or_default());
    let half = |at: usize| u32::from_le_bytes(s[at..at + 4].try_into().unwrap_or_default());
    let words = if n >= 8 {
        [word(0), word(n - 8)]
    } else if n >= 4 {
        let w = u64::from(half(0)) | u64::from(half(n - 4)) << 32;
        [w, w]
    } else if n > 0 {
        let w = u64::from_le_bytes([s[0], s[n / 2], s[n - 1], s[0], s[0], s[0], s[0], s[0]]);
        [w, w]
    } else {
        return false;
    };
    words.iter().any(|&w| word_needs_escape(w))
}

/// Whether a byte of `w` is below 0x20, `"` or `\\`: each test is "some byte is below
/// `n`" of *Bit Twiddling Hacks* (`hasless`: exact as a whole, whichever byte set it),
/// the equal ones as "some byte of `w ^ c` is below 1".
#[inline(always)]
fn word_needs_escape(w: u64) -> bool {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES * 0x80;
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x;
    let quote = w ^ (ONES * u64::from(b'"'));
    let backslash = w ^ (ONES * u64::from(b'\\'));
    (below(w, 0x20) | below(quote, 1) | below(backslash, 1)) & HIGH != 0
}

/// [`Text`]'s `Serializer` methods that open an array or an object: each writes its
/// `open` and hands back the [`Compound`] that writes the items and then `close`; a
/// variant's, after its `{"variant":`, also closes that object. They differ only in
/// name, unused arguments and brackets.
macro_rules! compound_opens {
    (variants: $($method:ident $open:literal $close:literal;)*) => {$(
        fn $method(
            self,
            _name: &'static str,
            _i: u32,
            variant: &'static str,
            _len: usize,
        ) -> Result<Compound<'a>> {
            self.variant(variant);
            Ok(self.compound($open, $close))
        }
    )*};
    ($($method:ident($($arg:ident: $t:ty),*) $open:literal $close:literal;)*) => {$(
        fn $method(self, $($arg: $t),*) -> Result<Compound<'a>> {
            Ok(self.compound($open, $close))
        }
    )*};
}

impl<'a> ser::Serializer for &'a mut Text {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    scalars!();

    fn serialize_bool(self, v: bool) -> Result {
        self.out.emit(if v { b"true" } else { b"false" });
        Ok(())
    }

    fn serialize_str(self, v: &str) -> Result {
        self.string(v, false);
        Ok(())
    }

    /// An array of numbers, as serde_json writes bytes.
    fn serialize_bytes(self, v: &[u8]) -> Result {
        let mut seq = self.compound(b"[", b"]");
        for b in v {
            ser::SerializeSeq::serialize_element(&mut seq, b)?;
        }
        ser::SerializeSeq::end(seq)
    }

    fn serialize_none(self) -> Result {
        self.serialize_unit()
    }

    fn serialize_some<T: ?Sized + Serialize>(self, v: &T) -> Result {
        v.serialize(self)
    }

    fn serialize_unit(self) -> Result {
        self.out.emit(b"null");
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result {
        self.serialize_unit()
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        v: &T,
    ) -> Result {
        self.variant(variant);
        v.serialize(&mut *self)?;
        self.out.emit(b"}");
        Ok(())
    }

    compound_opens!(
        serialize_seq(_len: Option<usize>) b"[" b"]";
        serialize_tuple(_len: usize) b"[" b"]";
        serialize_tuple_struct(_name: &'static str, _len: usize) b"[" b"]";
        serialize_map(_len: Option<usize>) b"{" b"}";
        serialize_struct(_name: &'static str, _len: usize) b"{" b"}";
    );
    compound_opens!(variants:
        serialize_tuple_variant b"[" b"]}";
        serialize_struct_variant b"{" b"}}";
    );
}

/// An array or object being written: every item after the first owes a comma.
pub(super) struct Compound<'a> {
    text: &'a mut Text,
    first: bool,
    close: &'static [u8],
}

impl Compound<'_> {
    #[inline]
    fn item(&mut self) {
        if self.first {
            self.first = false;
        } else {
            self.text.out.owe_comma();
        }
    }

    fn close(self) -> Result {
        self.text.out.emit(self.close);
        Ok(())
    }

    fn element<T: ?Sized + Serialize>(&mut self, v: &T) -> Result {
        self.item();
        v.serialize(&mut *self.text)
    }

    fn field<T: ?Sized + Serialize>(&mut self, key: &str, v: &T) -> Result {
        self.item();
        self.text.string(key, true);
        v.serialize(&mut *self.text)
    }
}

/// The `Compound` impls of serde's sequence traits (each element after its comma) and
/// of its struct traits (each field a key and its value): they differ only in name.
macro_rules! compound_impls {
    ($($trait:ident::$method:ident),*) => {$(
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = Error;

            fn $method<T: ?Sized + Serialize>(&mut self, v: &T) -> Result {
                self.element(v)
            }

            fn end(self) -> Result {
                self.close()
            }
        }
    )*};
    (fields: $($trait:ident),*) => {$(
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = Error;

            fn serialize_field<T: ?Sized + Serialize>(
                &mut self,
                key: &'static str,
                v: &T,
            ) -> Result {
                self.field(key, v)
            }

            fn end(self) -> Result {
                self.close()
            }
        }
    )*};
}

compound_impls!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);
compound_impls!(fields: SerializeStruct, SerializeStructVariant);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: ?Sized + Serialize>(&mut self, k: &T) -> Result {
        self.item();
        k.serialize(MapKey(&mut *self.text))
    }

    fn serialize_value<T: ?Sized + Serialize>(&mut self, v: &T) -> Result {
        v.serialize(&mut *self.text)
    }

    fn end(self) -> Result {
        self.close()
    }
}

/// An object's key, followed by its colon: a string, or (as serde_json allows) a
/// number, a bool or a unit variant written as one.
struct MapKey<'a>(&'a mut Text);

fn not_a_string() -> Error {
    Error::custom("an object key must be a string")
}

impl MapKey<'_> {
    fn int(self, v: impl itoa::Integer) -> Result {
        self.0.quoted_key(itoa::Buffer::new().format(v));
        Ok(())
    }

    fn float(self, v: impl zmij::Float, finite: bool) -> Result {
        if !finite {
            return Err(Error::custom("a float object key must be finite"));
        }
        self.0.quoted_key(zmij::Buffer::new().format_finite(v));
        Ok(())
    }
}

impl ser::Serializer for MapKey<'_> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Impossible<(), Error>;
    type SerializeStructVariant = Impossible<(), Error>;

    scalars!();

    fn serialize_str(self, v: &str) -> Result {
        self.0.string(v, true);
        Ok(())
    }

    fn serialize_bool(self, v: bool) -> Result {
        self.0.quoted_key(if v { "true" } else { "false" });
        Ok(())
    }

    fn serialize_bytes(self, _v: &[u8]) -> Result {
        Err(not_a_string())
    }

    fn serialize_none(self) -> Result {
        Err(not_a_string())
    }

    fn serialize_some<T: ?Sized + Serialize>(self, _v: &T) -> Result {
        Err(not_a_string())
    }

    fn serialize_unit(self) -> Result {
        Err(not_a_string())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result {
        Err(not_a_string())
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        _i: u32,
        _variant: &'static str,
        _v: &T,
    ) -> Result {
        Err(not_a_string())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq> {
        Err(not_a_string())
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple> {
        Err(not_a_string())
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct> {
        Err(not_a_string())
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _i: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant> {
        Err(not_a_string())
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap> {
        Err(not_a_string())
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self::SerializeStruct> {
        Err(not_a_string())
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _i: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant> {
        Err(not_a_string())
    }
}
