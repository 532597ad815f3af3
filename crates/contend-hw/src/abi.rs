//! What the Rust side and the CUDA sources of `kernels/` must agree on,
//! defined once, here: the limits ([`MAX_RANKS`], [`MAX_BLOCKS`],
//! [`NPHASE`]) and the argument block of the allreduce kernels
//! ([`ArArgs`]).
//!
//! [`prelude`] renders them as the C text NVRTC sees first (before
//! `kernels/common.cuh` and the kernel file): the integer typedefs, one
//! `#define` per limit, the `struct ArArgs` declaration in Rust's field
//! order, and `static_assert`s of every field's size and of the struct's
//! size (their sum: no padding) and alignment as Rust has them. The Rust side
//! checks at compile time that the struct has that plain C layout (every
//! field right after the previous one), so the offsets agree too. A field
//! added, removed, reordered or retyped in one place only is either carried
//! to both sides or fails to build, instead of scrambling the kernels'
//! arguments.

use std::fmt::Write as _;
use std::mem::{align_of, size_of};

/// The C spelling of a Rust type that crosses into the kernels.
pub trait CType {
    /// `u64 name`, `u64 name[8]`, ...
    fn c_decl(name: &str) -> String;
}

impl CType for u32 {
    fn c_decl(name: &str) -> String {
        format!("u32 {name}")
    }
}

impl CType for u64 {
    fn c_decl(name: &str) -> String {
        format!("u64 {name}")
    }
}

impl<T: CType, const N: usize> CType for [T; N] {
    fn c_decl(name: &str) -> String {
        format!("{}[{N}]", T::c_decl(name))
    }
}

/// The typedefs the prelude gives the kernels: (C name, C type, Rust size).
const TYPEDEFS: &[(&str, &str, usize)] = &[
    ("u32", "unsigned int", size_of::<u32>()),
    ("u64", "unsigned long long", size_of::<u64>()),
];

/// Declares each limit once, as a Rust constant and as a `#define` of the
/// prelude (with the same name and value).
macro_rules! limits {
    ($( $(#[doc = $doc:literal])* pub const $name:ident : $t:ty = $v:expr; )*) => {
        $( $(#[doc = $doc])* pub const $name: $t = $v; )*
        /// Every limit as (name, value, doc), in declaration order.
        pub const LIMITS: &[(&str, u64, &str)] = &[
            $( (stringify!($name), $name as u64, concat!($($doc),*)), )*
        ];
    };
}

limits! {
    /// Most ranks one allreduce kernel takes (the per-rank arrays of ArArgs).
    pub const MAX_RANKS: usize = 8;
    /// Most blocks an allreduce kernel is launched with (the flag area has one flag per block; contend_workload::FLAG_BLOCKS, which the grid choice obeys).
    pub const MAX_BLOCKS: u32 = contend_workload::FLAG_BLOCKS;
    /// Barrier phases one allreduce call may use (the flag area has one flag
    /// per phase): staged push and the copy-engine ring use 2 * (MAX_RANKS - 1).
    pub const NPHASE: usize = 16;
}

/// Bytes of one rank's flag area: `u32 flags[2][NPHASE][MAX_BLOCKS][MAX_RANKS]`
/// (parity, phase, block, source rank), as `flag_index` in
/// kernels/allreduce.cu addresses it.
pub const FLAG_BYTES: usize = 2 * NPHASE * MAX_BLOCKS as usize * MAX_RANKS * size_of::<u32>();

// Rank masks in the kernels are u32 bit sets.
const _: () = assert!(MAX_RANKS < 32);
// Staged push and the copy-engine ring use 2 * (nranks - 1) phases; a
// timed-out wait is reported as 1 + phase * 16 + peer.
const _: () = assert!(NPHASE >= 2 * (MAX_RANKS - 1) && NPHASE <= 16 && MAX_RANKS <= 16);

/// A field of a struct shared with the kernels, as Rust lays it out.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    pub name: &'static str,
    pub offset: usize,
    pub size: usize,
    pub align: usize,
    /// `u64 name[8]`
    pub c_decl: fn(&str) -> String,
    /// The field's doc comment (becomes a C comment).
    pub doc: &'static str,
}

/// Whether `fields` (in declaration order) make a struct of `size` bytes
/// with the plain C layout and no padding anywhere: every field starts where
/// the previous one ends, at a multiple of its alignment, and the struct
/// ends with the last field. Every byte the driver copies to the kernel is
/// then a byte of some field.
pub const fn plain_c_layout(fields: &[Field], size: usize) -> bool {
    let mut end = 0;
    let mut i = 0;
    while i < fields.len() {
        let f = &fields[i];
        if f.offset != end || !f.offset.is_multiple_of(f.align) {
            return false;
        }
        end += f.size;
        i += 1;
    }
    end == size
}

/// Declares a `#[repr(C)]` struct passed by value to the kernels, and its
/// field table ([`Field`]) for the prelude and the layout checks.
macro_rules! kernel_struct {
    (
        $(#[doc = $sdoc:literal])*
        pub struct $name:ident {
            $( $(#[doc = $doc:literal])* pub $f:ident : $t:ty, )*
        }
    ) => {
        $(#[doc = $sdoc])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name {
            $( $(#[doc = $doc])* pub $f: $t, )*
        }

        impl $name {
            /// The C name of the struct.
            pub const C_NAME: &'static str = stringify!($name);
            /// Every field in declaration order, as Rust lays it out.
            pub const FIELDS: &'static [Field] = &[
                $( Field {
                    name: stringify!($f),
                    offset: ::std::mem::offset_of!($name, $f),
                    size: size_of::<$t>(),
                    align: align_of::<$t>(),
                    c_decl: <$t as CType>::c_decl,
                    doc: concat!($($doc),*),
                }, )*
            ];
        }

        const _: () = assert!(
            plain_c_layout($name::FIELDS, size_of::<$name>()),
            concat!(stringify!($name), " must have the plain C layout (no padding)")
        );
    };
}

kernel_struct! {
    /// The argument block of every allreduce kernel of kernels/allreduce.cu
    /// (passed by value). Addresses are as the launching GPU sees them.
    pub struct ArArgs {
        /// each rank's exchange buffer, as this GPU addresses it
        pub buf: [u64; MAX_RANKS],
        /// each rank's flag area, as this GPU addresses it
        pub flags: [u64; MAX_RANKS],
        /// this rank's input (device memory)
        pub input: u64,
        /// this rank's output (device memory)
        pub output: u64,
        /// two u32 in this GPU's memory: calls so far, blocks done in this call
        pub counter: u64,
        /// u32 in this GPU's memory: nonzero once a wait timed out
        pub abort_word: u64,
        /// u32 in mapped host memory: why this rank gave up (0: fine)
        pub status: u64,
        /// 16-byte vectors in the message
        pub nvec: u64,
        /// bytes of one slot
        pub region: u64,
        /// longest wait on one flag
        pub timeout_ns: u64,
        /// this rank
        pub rank: u32,
        /// ranks in the team
        pub nranks: u32,
        /// hierarchical, island two-shot: ranks per group (consecutive ranks)
        pub group: u32,
        /// copy-engine ring: the step this kernel runs (0 .. 2 * (nranks - 1))
        pub step: u32,
        /// 1 when the exchange buffers are in host memory (host placement)
        pub host: u32,
        /// keeps the size a multiple of 8 with no implicit padding
        pub pad: u32,
    }
}

/// The C declaration of a struct from its field table, with `static_assert`s
/// of every field's size and of the struct's size and alignment. NVRTC has
/// no `offsetof` without headers, but the offsets follow: the fields are
/// declared in Rust's order, and a struct whose size is the sum of its
/// fields' sizes has no padding, so each field starts where Rust puts it
/// (the Rust side checks the same no-padding layout at compile time).
fn c_struct(out: &mut String, name: &str, fields: &[Field], size: usize, align: usize) {
    let _ = writeln!(out, "struct {name} {{");
    for f in fields {
        let decl = format!("{};", (f.c_decl)(f.name));
        let doc = f.doc.trim();
        if doc.is_empty() {
            let _ = writeln!(out, "    {decl}");
        } else {
            let _ = writeln!(out, "    {decl:<24}// {doc}");
        }
    }
    let _ = writeln!(out, "}};");
    let why = format!("differs from contend_hw::abi::{name}");
    for f in fields {
        let _ = writeln!(
            out,
            "static_assert(sizeof({name}::{field}) == {size}, \"size of {name}::{field} {why}\");",
            field = f.name,
            size = f.size,
        );
    }
    let _ = writeln!(
        out,
        "static_assert(sizeof({name}) == {size}, \"size of {name} {why} (or it has padding)\");"
    );
    let _ = writeln!(
        out,
        "static_assert(alignof({name}) == {align}, \"alignment of {name} {why}\");"
    );
}

/// The C text that comes first in every kernel file NVRTC compiles.
pub fn prelude() -> String {
    let mut s = String::from(
        "// Generated by contend-hw (crates/contend-hw/src/abi.rs): the limits and\n\
         // argument structs shared with the Rust side, with their Rust layout.\n",
    );
    for (name, ty, size) in TYPEDEFS {
        let _ = writeln!(s, "typedef {ty} {name};");
        let _ = writeln!(
            s,
            "static_assert(sizeof({name}) == {size}, \"{name} must be {size} bytes\");"
        );
    }
    for (name, value, doc) in LIMITS {
        let _ = writeln!(s, "#define {name} {value}  // {}", doc.trim());
    }
    c_struct(
        &mut s,
        ArArgs::C_NAME,
        ArArgs::FIELDS,
        size_of::<ArArgs>(),
        align_of::<ArArgs>(),
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ar_args_is_216_bytes_with_the_plain_c_layout() {
        // 16 addresses of the per-rank arrays, 8 more u64, 6 u32.
        assert_eq!(size_of::<ArArgs>(), 16 * 8 + 8 * 8 + 6 * 4);
        assert_eq!(align_of::<ArArgs>(), 8);
        assert!(plain_c_layout(ArArgs::FIELDS, size_of::<ArArgs>()));
        let names: Vec<&str> = ArArgs::FIELDS.iter().map(|f| f.name).collect();
        assert_eq!(
            names,
            [
                "buf",
                "flags",
                "input",
                "output",
                "counter",
                "abort_word",
                "status",
                "nvec",
                "region",
                "timeout_ns",
                "rank",
                "nranks",
                "group",
                "step",
                "host",
                "pad"
            ]
        );
    }

    #[test]
    fn the_layout_check_catches_padding_and_reordering() {
        let f = ArArgs::FIELDS;
        assert!(!plain_c_layout(f, size_of::<ArArgs>() + 8), "tail padding");
        let mut swapped = f.to_vec();
        swapped.swap(2, 3);
        assert!(!plain_c_layout(&swapped, size_of::<ArArgs>()), "reordered");
        let mut gap = f.to_vec();
        gap.remove(3);
        assert!(!plain_c_layout(&gap, size_of::<ArArgs>()), "missing field");
    }

    #[test]
    fn the_prelude_declares_every_limit_and_field_once() {
        let p = prelude();
        assert!(p.contains("#define MAX_RANKS 8 "), "{p}");
        assert!(p.contains("#define MAX_BLOCKS 1024 "), "{p}");
        assert!(p.contains("#define NPHASE 16 "), "{p}");
        assert!(p.contains("    u64 buf[8];"), "{p}");
        assert!(p.contains("    u64 input;"), "{p}");
        assert!(p.contains("    u32 pad;"), "{p}");
        assert!(p.contains("static_assert(sizeof(ArArgs) == 216,"), "{p}");
        assert!(p.contains("static_assert(alignof(ArArgs) == 8,"), "{p}");
        assert!(
            p.contains("static_assert(sizeof(ArArgs::buf) == 64,"),
            "{p}"
        );
        for f in ArArgs::FIELDS {
            assert_eq!(
                p.matches(&format!("sizeof(ArArgs::{}) ==", f.name)).count(),
                1
            );
        }
        assert_eq!(p.matches("struct ArArgs {").count(), 1);
    }

    #[test]
    fn flag_area_matches_the_kernels_indexing() {
        // flag_index(parity, phase, block, src) of the last flag, plus one.
        let last = ((NPHASE as u64 * 2 - 1) * u64::from(MAX_BLOCKS) + u64::from(MAX_BLOCKS) - 1)
            * MAX_RANKS as u64
            + MAX_RANKS as u64
            - 1;
        assert_eq!((last + 1) * 4, FLAG_BYTES as u64);
    }
}
