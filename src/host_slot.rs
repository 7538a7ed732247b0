//! A slot where the embedding host (the Python glue) keeps its own object for a
//! shared value: the message object Python code was handed or gave, so that a
//! message crosses into the host once and comes back as the very same object.
//!
//! The slot is not part of the value: it is equal to every other slot, is never
//! serialized, and a clone starts empty (a clone is made to be changed, and the
//! host object of the original no longer describes it).

use std::any::Any;
use std::fmt;
use std::sync::{Arc, OnceLock};

/// An opaque, set-once host object. The core never reads it.
#[derive(Default)]
pub struct HostSlot(OnceLock<Arc<dyn Any + Send + Sync>>);

impl HostSlot {
    /// A slot holding `obj` already.
    pub fn with(obj: Arc<dyn Any + Send + Sync>) -> HostSlot {
        let slot = HostSlot::default();
        let _ = slot.0.set(obj);
        slot
    }

    /// The host object, if one was kept.
    pub fn get(&self) -> Option<&Arc<dyn Any + Send + Sync>> {
        self.0.get()
    }

    /// The host object, keeping `make()`'s when none was kept yet (the first caller
    /// wins when two race; both get the object that was kept).
    pub fn get_or_try_init<E>(
        &self,
        make: impl FnOnce() -> Result<Arc<dyn Any + Send + Sync>, E>,
    ) -> Result<&Arc<dyn Any + Send + Sync>, E> {
        if let Some(v) = self.0.get() {
            return Ok(v);
        }
        let v = make()?;
        let _ = self.0.set(v);
        Ok(self.0.get().expect("the slot was just set"))
    }
}

impl Clone for HostSlot {
    fn clone(&self) -> Self {
        HostSlot::default()
    }
}

impl PartialEq for HostSlot {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl fmt::Debug for HostSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "HostSlot(set)"
        } else {
            "HostSlot(empty)"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_not_part_of_the_value() {
        let set = HostSlot::with(Arc::new(7_u32));
        assert_eq!(set, HostSlot::default());
        assert!(set.clone().get().is_none(), "a clone starts empty");
        let got = set.get().unwrap().downcast_ref::<u32>().copied();
        assert_eq!(got, Some(7));
    }

    #[test]
    fn the_first_object_kept_stays() {
        let slot = HostSlot::default();
        let a: Result<_, ()> = slot.get_or_try_init(|| Ok(Arc::new(1_u8)));
        assert_eq!(a.unwrap().downcast_ref::<u8>(), Some(&1));
        let b: Result<_, ()> = slot.get_or_try_init(|| Ok(Arc::new(2_u8)));
        assert_eq!(b.unwrap().downcast_ref::<u8>(), Some(&1));
    }
}
