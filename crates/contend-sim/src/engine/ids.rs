//! Typed ids of the simulation's objects (actors, transfers, groups,
//! channels, paths; a fidelity defines its own with [`id!`]) and the arenas that hand them out, so no index of one
//! kind can be used for another: [`Arena`] keeps every item for the run,
//! [`Window`] frees items that have died (transfers, groups), so memory
//! stays flat however many collectives a run has.

use std::collections::{HashMap, HashSet, VecDeque};
use std::marker::PhantomData;

macro_rules! id {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub(crate) struct $name(pub u32);
        impl $name {
            #[inline]
            pub fn ix(self) -> usize {
                self.0 as usize
            }
        }
        impl $crate::engine::ids::Id for $name {
            #[inline]
            fn ix(self) -> usize {
                $name::ix(self)
            }
        }
        impl From<usize> for $name {
            #[inline]
            fn from(i: usize) -> Self {
                $name(u32::try_from(i).expect(concat!(stringify!($name), " overflows u32")))
            }
        }
    };
}
pub(crate) use id;

/// What an arena needs of its ids: the index they stand for.
pub(crate) trait Id: Copy {
    fn ix(self) -> usize;
}

id!(
    /// An actor: one rank of a collective, or one end of a transfer stream.
    ActorId
);
id!(
    /// One transfer: the bytes of one access of a Fetch or Post op.
    XferId
);
id!(
    /// The transfers one op started together (they share a request window).
    GroupId
);
id!(
    /// A channel of the fabric: one direction of a link or a root-complex stage.
    ChId
);
id!(
    /// A channel path between two endpoints.
    PathId
);
id!(
    /// Flags landing together, in the order their pushes came, kept by an
    /// agenda that batches them (the flow fidelity's, `flag_batch.rs`).
    FlagBatchId
);

/// A vector indexed by one kind of id.
#[derive(Clone, Debug)]
pub(crate) struct Arena<I, T> {
    items: Vec<T>,
    _id: PhantomData<I>,
}

impl<I, T> Default for Arena<I, T> {
    fn default() -> Self {
        Arena {
            items: Vec::new(),
            _id: PhantomData,
        }
    }
}

impl<I: From<usize> + Copy, T> Arena<I, T> {
    pub fn from_vec(items: Vec<T>) -> Self {
        Arena {
            items,
            _id: PhantomData,
        }
    }
    /// Adds an item and returns its id.
    pub fn push(&mut self, item: T) -> I {
        let id = I::from(self.items.len());
        self.items.push(item);
        id
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter()
    }
    pub fn ids(&self) -> impl Iterator<Item = I> + use<I, T> {
        (0..self.items.len()).map(I::from)
    }
}

/// An arena of items that die: ids are handed out in order and never
/// reused; a removed item's slot is freed once every older item is gone
/// too, so the storage spans only from the oldest live item to the newest.
#[derive(Clone, Debug)]
pub(crate) struct Window<I, T> {
    /// Id of `items[0]`.
    base: usize,
    items: VecDeque<Option<T>>,
    _id: PhantomData<I>,
}

impl<I, T> Default for Window<I, T> {
    fn default() -> Self {
        Window {
            base: 0,
            items: VecDeque::new(),
            _id: PhantomData,
        }
    }
}

impl<I: From<usize> + Copy + Into<usize>, T> Window<I, T> {
    /// Adds an item and returns its id.
    pub fn push(&mut self, item: T) -> I {
        let id = I::from(self.base + self.items.len());
        self.items.push_back(Some(item));
        id
    }
    /// The id the next pushed item will get.
    pub fn next_id(&self) -> I {
        I::from(self.base + self.items.len())
    }
    /// The item, if it is still live.
    #[inline]
    pub fn get(&self, i: I) -> Option<&T> {
        let k = i.into().checked_sub(self.base)?;
        self.items.get(k)?.as_ref()
    }
    #[inline]
    pub fn get_mut(&mut self, i: I) -> Option<&mut T> {
        let k = i.into().checked_sub(self.base)?;
        self.items.get_mut(k)?.as_mut()
    }
    /// The item has died: takes it out and frees every dead slot at the
    /// old end.
    pub fn remove(&mut self, i: I) -> Option<T> {
        let k = i.into().checked_sub(self.base)?;
        let item = self.items.get_mut(k)?.take();
        while self.items.front().is_some_and(|x| x.is_none()) {
            self.items.pop_front();
            self.base += 1;
        }
        item
    }
    /// Slots held now (live items and dead ones behind the oldest live).
    #[cfg(test)]
    pub fn held(&self) -> usize {
        self.items.len()
    }
}

macro_rules! window_index {
    ($($name:ident),*) => {$(
        impl From<$name> for usize {
            #[inline]
            fn from(i: $name) -> usize {
                i.ix()
            }
        }
        impl<T> std::ops::Index<$name> for Window<$name, T> {
            type Output = T;
            #[inline]
            fn index(&self, i: $name) -> &T {
                self.get(i).expect(concat!("a live ", stringify!($name)))
            }
        }
        impl<T> std::ops::IndexMut<$name> for Window<$name, T> {
            #[inline]
            fn index_mut(&mut self, i: $name) -> &mut T {
                self.get_mut(i).expect(concat!("a live ", stringify!($name)))
            }
        }
    )*};
}
window_index!(XferId, GroupId);

impl<I: Id, T> std::ops::Index<I> for Arena<I, T> {
    type Output = T;
    #[inline]
    fn index(&self, i: I) -> &T {
        &self.items[i.ix()]
    }
}
impl<I: Id, T> std::ops::IndexMut<I> for Arena<I, T> {
    #[inline]
    fn index_mut(&mut self, i: I) -> &mut T {
        &mut self.items[i.ix()]
    }
}

/// A small, fast, deterministic hasher for the simulator's integer keys
/// (the FxHash multiply-rotate scheme); std's SipHash costs more than the
/// work it guards on the hot path.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        // eight bytes a round (slices of integers hash as their bytes)
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
        for b in chunks.remainder() {
            self.write_u64(*b as u64);
        }
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) type FxMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<FxHasher>>;
/// A hash set with the same hasher.
pub(crate) type FxSet<K> = HashSet<K, std::hash::BuildHasherDefault<FxHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids stay unique and in order; storage shrinks only from the old end,
    /// once every older item is gone.
    #[test]
    fn a_window_frees_dead_items_from_its_old_end() {
        let mut w: Window<GroupId, u32> = Window::default();
        let ids: Vec<GroupId> = (0..5).map(|k| w.push(k)).collect();
        assert_eq!(ids, (0..5).map(GroupId).collect::<Vec<_>>());
        assert_eq!(w.remove(GroupId(1)), Some(1));
        assert_eq!(w.held(), 5, "item 0 still holds the window open");
        assert!(w.get(GroupId(1)).is_none());
        assert_eq!(w.remove(GroupId(0)), Some(0));
        assert_eq!(w.held(), 3);
        assert_eq!(w[GroupId(2)], 2);
        assert_eq!(w.remove(GroupId(0)), None, "a dead id stays dead");
        assert_eq!(w.push(9), GroupId(5), "ids are never reused");
        for g in 2..6 {
            w.remove(GroupId(g));
        }
        assert_eq!(w.held(), 0);
        assert_eq!(w.next_id(), GroupId(6));
        assert!(w.get(GroupId(7)).is_none());
    }
}
