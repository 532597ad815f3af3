//! Typed ids of the simulation's objects (actors, transfers, groups, packets,
//! channels, paths) and the arena that hands them out, so no index of one
//! kind can be used for another.

use std::collections::HashMap;
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
        impl From<usize> for $name {
            #[inline]
            fn from(i: usize) -> Self {
                $name(u32::try_from(i).expect(concat!(stringify!($name), " overflows u32")))
            }
        }
    };
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
    /// A TLP in flight (a slot of the packet pool).
    PktId
);
id!(
    /// A channel of the fabric: one direction of a link or a root-complex stage.
    ChId
);
id!(
    /// A channel path between two endpoints.
    PathId
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
    /// The id the next pushed item will get.
    pub fn next_id(&self) -> I {
        I::from(self.items.len())
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

macro_rules! index {
    ($($name:ident),*) => {$(
        impl<T> std::ops::Index<$name> for Arena<$name, T> {
            type Output = T;
            #[inline]
            fn index(&self, i: $name) -> &T {
                &self.items[i.ix()]
            }
        }
        impl<T> std::ops::IndexMut<$name> for Arena<$name, T> {
            #[inline]
            fn index_mut(&mut self, i: $name) -> &mut T {
                &mut self.items[i.ix()]
            }
        }
    )*};
}
index!(ActorId, XferId, GroupId, PktId, ChId, PathId);

/// A small, fast, deterministic hasher for the simulator's integer keys
/// (the FxHash multiply-rotate scheme); std's SipHash costs more than the
/// work it guards on the hot path.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
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
