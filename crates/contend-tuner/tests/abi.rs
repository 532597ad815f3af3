//! The built plugin as NCCL sees it: dlopened, its exported structs found by
//! name, init / getCollInfo / finalize called through the C ABI on tables
//! this test writes. The layouts are restated here from NCCL's headers
//! (NVIDIA/nccl v2.28.3-1 `src/include/plugin/tuner/tuner_v4.h`,
//! `tuner_v5.h`; v2.30.3-1 `tuner_v6.h`), not taken from the plugin, so a
//! layout slip on either side fails here. The cost table is NCCL's
//! `float[7][3]` (`NCCL_NUM_ALGORITHMS` × `NCCL_NUM_PROTOCOLS`): Tree 0,
//! Ring 1, …; LL 0, LL128 1, Simple 2; -1 for what NCCL will not select.
//!
//! The library is `libcontend_tuner.so` next to this test's binary (cargo
//! builds the package's cdylib before its tests, into the same `deps`).

#![allow(unsafe_code)]

use std::ffi::{CStr, c_char, c_int, c_ulong, c_void};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

const A: usize = 7;
const P: usize = 3;
const TREE: usize = 0;
const RING: usize = 1;
const LL: usize = 0;
const LL128: usize = 1;
const SIMPLE: usize = 2;
const IGNORE: f32 = -1.0;

#[repr(C)]
struct Constants {
    base_latencies: [[f64; P]; A],
    hw_latencies: [[[f64; P]; A]; 3],
    // llMaxBws, perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws,
    // perChMaxNVLSTreeBws: [4 compcaps][3 tuning scales] each
    bws: [[[f64; 3]; 4]; 5],
}

type Logger = unsafe extern "C" fn(c_int, c_ulong, *const c_char, c_int, *const c_char, ...);
type InitV5 = unsafe extern "C" fn(
    *mut *mut c_void,
    u64,
    usize,
    usize,
    Option<Logger>,
    *mut c_void,
    *mut Constants,
) -> c_int;
type InitV4 = unsafe extern "C" fn(usize, usize, Option<Logger>, *mut *mut c_void) -> c_int;
type GetCollInfo = unsafe extern "C" fn(
    *mut c_void,
    c_int,
    usize,
    c_int,
    *mut *mut f32,
    c_int,
    c_int,
    c_int,
    *mut c_int,
) -> c_int;
type Finalize = unsafe extern "C" fn(*mut c_void) -> c_int;

#[repr(C)]
struct V4 {
    name: *const c_char,
    init: InitV4,
    get_coll_info: GetCollInfo,
    destroy: Finalize,
}
#[repr(C)]
struct V5 {
    name: *const c_char,
    init: InitV5,
    get_coll_info: GetCollInfo,
    finalize: Finalize,
}
#[repr(C)]
struct V6 {
    name: *const c_char,
    init: InitV5,
    get_coll_info: GetCollInfo,
    finalize: Finalize,
    get_chunk_size: *const c_void,
}

/// `ncclFunc_t`: ncclFuncAllGather 2, ncclFuncAllReduce 4.
const ALLGATHER: c_int = 2;
const ALLREDUCE: c_int = 4;

/// Tests share the environment and the captured log: one at a time.
static LOCK: Mutex<()> = Mutex::new(());
static LINES: Mutex<Vec<(c_int, String)>> = Mutex::new(Vec::new());

#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
/// The logger NCCL would pass, fixed to the plugin's one call shape
/// (`"%s"` and one string): on x86-64 System V a variadic call passes
/// those arguments in the same registers as this fixed-argument function
/// receives them (plus %al, which it ignores).
extern "C" fn capture(
    level: c_int,
    _flags: c_ulong,
    _file: *const c_char,
    _line: c_int,
    fmt: *const c_char,
    arg: *const c_char,
) {
    // SAFETY: the plugin passes NUL-terminated strings for both.
    let (fmt, arg) = unsafe { (CStr::from_ptr(fmt), CStr::from_ptr(arg)) };
    assert_eq!(fmt, c"%s", "the plugin logs through one format");
    LINES
        .lock()
        .unwrap()
        .push((level, arg.to_string_lossy().into_owned()));
}

#[cfg(target_arch = "x86_64")]
fn logger() -> Option<Logger> {
    type Fixed = extern "C" fn(c_int, c_ulong, *const c_char, c_int, *const c_char, *const c_char);
    let f: Fixed = capture;
    // SAFETY: see `capture`: the plugin calls it with exactly these six
    // arguments, which x86-64 passes alike to variadic and fixed functions.
    Some(unsafe { std::mem::transmute::<Fixed, Logger>(f) })
}

#[cfg(not(target_arch = "x86_64"))]
fn logger() -> Option<Logger> {
    None
}

fn lines() -> Vec<(c_int, String)> {
    std::mem::take(&mut *LINES.lock().unwrap())
}

fn plugin_path() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let name = "libcontend_tuner.so";
    [deps.join(name), deps.parent().unwrap().join(name)]
        .into_iter()
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("{name} is not built next to {}", deps.display()))
}

fn library() -> libloading::Library {
    // SAFETY: the plugin has no initialisers that run code at load.
    unsafe { libloading::Library::new(plugin_path()) }.unwrap()
}

/// The exported struct `name`, as NCCL finds it (dlsym of a data symbol).
fn symbol<T>(lib: &libloading::Library, name: &str) -> Option<*const T> {
    // SAFETY: a data symbol: its address is a pointer to the struct.
    unsafe { lib.get::<*const T>(name) }.ok().map(|s| *s)
}

fn set_table(path: Option<&Path>) {
    // SAFETY: every test holds LOCK; nothing else reads the environment.
    unsafe {
        match path {
            Some(p) => std::env::set_var("CONTEND_TUNER_TABLE", p),
            None => std::env::remove_var("CONTEND_TUNER_TABLE"),
        }
    }
}

fn write_table(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("contend-tuner-abi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

const TABLE: &str = r#"# written by the ABI test
format = "contend-nccl-tuner-table/1"
stamp = "abi test"
topology = "test box"
nccl = "2.28"

[[comm]]
ranks = 4
nodes = 1
note = "four ranks"

[[comm.base_latency]]
algorithm = "ring"
protocol = "ll"
us = 3.5

[[comm.base_latency]]
algorithm = "tree"
protocol = "simple"
us = 0.25

[[comm.range]]
collective = "allreduce"
min_bytes = 1024
max_bytes = 2048
cost = [
  { algorithm = "ring", protocol = "ll", us = [10.0, 20.0], channels = 3 },
  { algorithm = "tree", protocol = "ll", us = [12.0, 14.0], channels = 5 },
  { algorithm = "ring", protocol = "ll128", us = [1.0, 1.0], channels = 7 },
  { algorithm = "ring", protocol = "simple", us = [30.0, 30.0], channels = 2 },
]
"#;

/// NCCL's table for a PCIe box: LL128 ignored, the rest its own times.
fn nccl_table() -> [[f32; P]; A] {
    let mut t = [[IGNORE; P]; A];
    t[TREE][LL] = 50.0;
    t[TREE][SIMPLE] = 40.0;
    t[RING][LL] = 60.0;
    t[RING][SIMPLE] = 45.0;
    t
}

fn constants() -> Constants {
    let mut c = Constants {
        base_latencies: [[0.0; P]; A],
        hw_latencies: [[[0.0; P]; A]; 3],
        bws: [[[0.0; 3]; 4]; 5],
    };
    for a in 0..A {
        for p in 0..P {
            c.base_latencies[a][p] = 100.0 + (a * P + p) as f64;
            for h in 0..3 {
                c.hw_latencies[h][a][p] = 200.0 + (h * A * P + a * P + p) as f64;
            }
        }
    }
    for (i, v) in c.bws.iter_mut().flatten().flatten().enumerate() {
        *v = 300.0 + i as f64;
    }
    c
}

/// One getCollInfo call: the table after it and the channels asked for.
fn call(
    get: GetCollInfo,
    ctx: *mut c_void,
    coll: c_int,
    bytes: usize,
    mut t: [[f32; P]; A],
) -> ([[f32; P]; A], c_int) {
    let mut ch: c_int = 0;
    // SAFETY: a context from init, NCCL's table shape, a channel slot.
    let rc = unsafe {
        get(
            ctx,
            coll,
            bytes,
            1,
            t.as_mut_ptr().cast(),
            A as c_int,
            P as c_int,
            0,
            &mut ch,
        )
    };
    assert_eq!(rc, 0, "getCollInfo returned {rc}");
    (t, ch)
}

fn init_v5(s: *const V5, ranks: usize, c: &mut Constants) -> (c_int, *mut c_void) {
    let mut ctx: *mut c_void = std::ptr::null_mut();
    // SAFETY: `s` is the exported struct; arguments as NCCL passes them.
    let rc = unsafe {
        ((*s).init)(
            &mut ctx,
            0x1234,
            ranks,
            1,
            logger(),
            std::ptr::null_mut(),
            c,
        )
    };
    (rc, ctx)
}

#[test]
fn exports_the_tuner_structs_by_name() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let lib = library();
    for (name, s) in [
        (
            "ncclTunerPlugin_v4",
            symbol::<V4>(&lib, "ncclTunerPlugin_v4").map(|s| {
                // SAFETY: found by name: the plugin's static struct.
                unsafe { (*s).name }
            }),
        ),
        (
            "ncclTunerPlugin_v5",
            symbol::<V5>(&lib, "ncclTunerPlugin_v5").map(|s| {
                // SAFETY: as above.
                unsafe { (*s).name }
            }),
        ),
        (
            "ncclTunerPlugin_v6",
            symbol::<V6>(&lib, "ncclTunerPlugin_v6").map(|s| {
                // SAFETY: as above.
                unsafe { (*s).name }
            }),
        ),
    ] {
        let n = s.unwrap_or_else(|| panic!("{name} is not exported"));
        // SAFETY: the plugin's name is a NUL-terminated literal.
        assert_eq!(unsafe { CStr::from_ptr(n) }, c"contend", "{name}");
    }
    let v6 = symbol::<V6>(&lib, "ncclTunerPlugin_v6").unwrap();
    // SAFETY: as above.
    assert!(
        unsafe { (*v6).get_chunk_size }.is_null(),
        "NCCL keeps its chunk sizes"
    );
    // no claim to ABIs it does not implement
    for old in [
        "ncclTunerPlugin_v3",
        "ncclTunerPlugin_v2",
        "ncclTunerPlugin_v7",
    ] {
        assert!(symbol::<u8>(&lib, old).is_none(), "{old}");
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn v5_writes_costs_channels_and_base_latencies() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let lib = library();
    let s = symbol::<V5>(&lib, "ncclTunerPlugin_v5").unwrap();
    let path = write_table("ok.toml", TABLE);
    set_table(Some(&path));
    lines();
    let mut c = constants();
    let (rc, ctx) = init_v5(s, 4, &mut c);
    assert_eq!(rc, 0);
    assert!(!ctx.is_null());
    // base latencies: the two named, every other constant as it was
    let want = constants();
    for a in 0..A {
        for p in 0..P {
            let v = match (a, p) {
                (RING, LL) => 3.5,
                (TREE, SIMPLE) => 0.25,
                _ => want.base_latencies[a][p],
            };
            assert_eq!(c.base_latencies[a][p], v, "base [{a}][{p}]");
        }
    }
    assert_eq!(c.hw_latencies, want.hw_latencies);
    assert_eq!(c.bws, want.bws);
    let log = lines();
    assert!(
        log.iter().any(|(l, m)| *l == 3
            && m.contains("4 ranks on 1 node(s): 1 size range(s); four ranks")
            && m.contains("abi test")),
        "{log:?}"
    );
    assert!(
        log.iter().any(|(_, m)| m.contains("baseLatencies")
            && m.contains("RING/LL 103.00 -> 3.50")
            && m.contains("TREE/SIMPLE 102.00 -> 0.25")),
        "{log:?}"
    );
    // SAFETY: the exported struct.
    let get = unsafe { (*s).get_coll_info };

    // 1 KiB: every selectable entry it has a cost for, at the range start
    let (t, ch) = call(get, ctx, ALLREDUCE, 1024, nccl_table());
    let mut w = nccl_table();
    w[RING][LL] = 10.0;
    w[TREE][LL] = 12.0;
    w[RING][SIMPLE] = 30.0;
    // Ring LL128 stays ignored although its cost is the cheapest;
    // Tree Simple has no cost and keeps NCCL's
    assert_eq!(t, w);
    assert_eq!(t[RING][LL128], IGNORE);
    assert_eq!(ch, 3, "Ring LL is cheapest: its channels");
    // 1.5 KiB: the straight line; Tree LL now cheaper
    let (t, ch) = call(get, ctx, ALLREDUCE, 1536, nccl_table());
    assert_eq!(
        (t[RING][LL], t[TREE][LL], t[RING][SIMPLE]),
        (15.0, 13.0, 30.0)
    );
    assert_eq!(ch, 5);
    // NCCL's own entry cheaper than all the table's: no channels asked
    let mut own = nccl_table();
    own[TREE][SIMPLE] = 5.0;
    let (t, ch) = call(get, ctx, ALLREDUCE, 2048, own);
    assert_eq!(
        (t[RING][LL], t[TREE][LL], t[TREE][SIMPLE]),
        (20.0, 14.0, 5.0)
    );
    assert_eq!(ch, 0);
    assert!(lines().is_empty(), "no line per call");

    // outside every range, and a collective without ranges: untouched,
    // said once each
    for (coll, bytes) in [
        (ALLREDUCE, 4096),
        (ALLREDUCE, 512),
        (ALLGATHER, 1024),
        (ALLGATHER, 1536),
    ] {
        let (t, ch) = call(get, ctx, coll, bytes, nccl_table());
        assert_eq!((t, ch), (nccl_table(), 0), "{coll} {bytes}");
    }
    let log = lines();
    assert_eq!(log.len(), 2, "{log:?}");
    assert!(
        log[0].1.contains("no entry for allreduce of 4096 B"),
        "{log:?}"
    );
    assert!(
        log[1].1.contains("no entry for allgather of 1024 B"),
        "{log:?}"
    );
    assert!(
        log.iter()
            .all(|l| l.1.starts_with("contend-tuner: ") && l.0 == 3)
    );

    // SAFETY: the context init made, finalized once.
    assert_eq!(unsafe { ((*s).finalize)(ctx) }, 0);
    set_table(None);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn v6_and_v4_take_the_same_table() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let lib = library();
    let path = write_table("ok6.toml", TABLE);
    set_table(Some(&path));
    lines();
    let s6 = symbol::<V6>(&lib, "ncclTunerPlugin_v6").unwrap();
    let mut c = constants();
    let mut ctx: *mut c_void = std::ptr::null_mut();
    // SAFETY: the exported struct; arguments as NCCL 2.30 passes them.
    let rc = unsafe { ((*s6).init)(&mut ctx, 7, 4, 1, logger(), std::ptr::null_mut(), &mut c) };
    assert_eq!(rc, 0);
    assert_eq!(c.base_latencies[RING][LL], 3.5);
    // SAFETY: as above.
    let (t, ch) = call(
        unsafe { (*s6).get_coll_info },
        ctx,
        ALLREDUCE,
        1024,
        nccl_table(),
    );
    assert_eq!((t[RING][LL], ch), (10.0, 3));
    // SAFETY: as above.
    assert_eq!(unsafe { ((*s6).finalize)(ctx) }, 0);
    assert!(lines().iter().any(|l| l.1.contains("tuner ABI v6")));

    let s4 = symbol::<V4>(&lib, "ncclTunerPlugin_v4").unwrap();
    let mut ctx: *mut c_void = std::ptr::null_mut();
    // SAFETY: the exported struct; arguments as NCCL 2.21-2.27 pass them.
    let rc = unsafe { ((*s4).init)(4, 1, logger(), &mut ctx) };
    assert_eq!(rc, 0);
    // SAFETY: as above.
    let (t, ch) = call(
        unsafe { (*s4).get_coll_info },
        ctx,
        ALLREDUCE,
        1536,
        nccl_table(),
    );
    assert_eq!((t[TREE][LL], ch), (13.0, 5));
    // SAFETY: as above.
    assert_eq!(unsafe { ((*s4).destroy)(ctx) }, 0);
    let log = lines();
    assert!(
        log.iter().any(|l| l.1.contains("v4 hands no constants")),
        "{log:?}"
    );
    set_table(None);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn no_entry_or_no_table_leaves_every_call_to_nccl() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let lib = library();
    let s = symbol::<V5>(&lib, "ncclTunerPlugin_v5").unwrap();
    // SAFETY: the exported struct.
    let (get, fin) = unsafe { ((*s).get_coll_info, (*s).finalize) };
    let path = write_table("ok-other.toml", TABLE);
    for (table, says) in [
        (
            Some(path.as_path()),
            "has no entry for 3 ranks on 1 node(s) (it has ranks/nodes 4/1)",
        ),
        (None, "CONTEND_TUNER_TABLE is not set"),
    ] {
        set_table(table);
        lines();
        let mut c = constants();
        let (rc, ctx) = init_v5(s, 3, &mut c);
        assert_eq!(rc, 0);
        assert_eq!(c.base_latencies, constants().base_latencies);
        for bytes in [1024, 1536, 1 << 20] {
            assert_eq!(
                call(get, ctx, ALLREDUCE, bytes, nccl_table()),
                (nccl_table(), 0)
            );
        }
        let log = lines();
        let said: Vec<&(c_int, String)> = log.iter().filter(|l| l.1.contains(says)).collect();
        assert_eq!(said.len(), 1, "said once: {log:?}");
        assert!(said[0].1.contains("NCCL's own choices"), "{log:?}");
        // SAFETY: the context init made.
        assert_eq!(unsafe { fin(ctx) }, 0);
    }
}

#[cfg(target_arch = "x86_64")]
#[test]
fn a_malformed_or_missing_table_fails_init_with_its_place() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let lib = library();
    let s = symbol::<V5>(&lib, "ncclTunerPlugin_v5").unwrap();
    let bad = TABLE.replace("channels = 5", "channels = 0");
    let line = bad
        .lines()
        .position(|l| l.contains("channels = 0"))
        .unwrap()
        + 1;
    let path = write_table("bad.toml", &bad);
    let broken = write_table(
        "broken.toml",
        "format = \"contend-nccl-tuner-table/1\"\n[[comm]\n",
    );
    let missing = path.with_file_name("missing.toml");
    // a FIFO blocked NCCL's init forever, /dev/zero grew the host to 14.5 GB
    let fifo = path.with_file_name("table-fifo");
    let _ = std::fs::remove_file(&fifo);
    let have_fifo = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    let zero = PathBuf::from("/dev/zero");
    let mut cases = vec![
        (&path, 5, format!("{}:{line}:", path.display())),
        (&path, 5, "(field `channels`)".to_string()),
        (&broken, 5, format!("{}:2:", broken.display())),
        (
            &missing,
            2,
            format!("cannot read the table {}", missing.display()),
        ),
    ];
    if zero.exists() {
        cases.push((&zero, 2, "/dev/zero (CONTEND_TUNER_TABLE): ".to_string()));
        cases.push((&zero, 2, "not a regular file".to_string()));
    }
    if have_fifo {
        cases.push((&fifo, 2, "not a regular file".to_string()));
    }
    for (p, code, says) in cases {
        let t0 = std::time::Instant::now();
        set_table(Some(p));
        lines();
        let mut c = constants();
        let (rc, ctx) = init_v5(s, 4, &mut c);
        assert_eq!(rc, code, "{}", p.display());
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(2),
            "{} took {:?}",
            p.display(),
            t0.elapsed()
        );
        assert!(ctx.is_null(), "no context on failure");
        assert_eq!(
            c.base_latencies,
            constants().base_latencies,
            "nothing changed"
        );
        let log = lines();
        assert!(
            log.iter().any(|(l, m)| *l == 2 && m.contains(&says)),
            "WARN with `{says}`: {log:?}"
        );
    }
    set_table(None);
}

#[test]
fn bad_arguments_are_error_codes() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let lib = library();
    let s = symbol::<V5>(&lib, "ncclTunerPlugin_v5").unwrap();
    let path = write_table("ok-args.toml", TABLE);
    set_table(Some(&path));
    // SAFETY: the exported struct; a null context slot and no logger.
    let rc = unsafe {
        ((*s).init)(
            std::ptr::null_mut(),
            0,
            4,
            1,
            None,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 4, "ncclInvalidArgument");
    let mut ctx: *mut c_void = std::ptr::null_mut();
    // SAFETY: no logger and no constants: both allowed.
    let rc = unsafe {
        ((*s).init)(
            &mut ctx,
            0,
            4,
            1,
            None,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0);
    let mut ch: c_int = 0;
    let mut t = nccl_table();
    // SAFETY: a null table, then a table of an impossible shape: refused
    // before any access.
    unsafe {
        let get = (*s).get_coll_info;
        assert_eq!(
            get(
                ctx,
                ALLREDUCE,
                1024,
                1,
                std::ptr::null_mut(),
                7,
                3,
                0,
                &mut ch
            ),
            4
        );
        assert_eq!(
            get(
                ctx,
                ALLREDUCE,
                1024,
                1,
                t.as_mut_ptr().cast(),
                0,
                3,
                0,
                &mut ch
            ),
            4
        );
        assert_eq!(
            get(
                std::ptr::null_mut(),
                ALLREDUCE,
                1024,
                1,
                t.as_mut_ptr().cast(),
                7,
                3,
                0,
                &mut ch
            ),
            4
        );
        assert_eq!(((*s).finalize)(ctx), 0);
        assert_eq!(((*s).finalize)(std::ptr::null_mut()), 0);
    }
    assert_eq!((t, ch), (nccl_table(), 0));
    set_table(None);
}
