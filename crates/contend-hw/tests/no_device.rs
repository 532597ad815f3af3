//! On a machine without libcuda (CI, the development machine) every entry
//! point fails with one clear sentence and nothing panics.

use contend_hw::driver::driver_present;

const NO_DRIVER: &str =
    "no CUDA driver found (libcuda.so could not be loaded): contend hw needs an NVIDIA GPU machine";

#[test]
fn opening_the_machine_without_a_driver_is_one_sentence() {
    if driver_present() {
        eprintln!("skipped: this machine has libcuda");
        return;
    }
    for kernels in [false, true] {
        let e = contend_hw::open(kernels).unwrap_err();
        assert_eq!(e.to_string(), NO_DRIVER);
        assert!(!e.to_string().contains('\n'));
    }
    assert_eq!(
        contend_hw::driver::init().unwrap_err().to_string(),
        NO_DRIVER
    );
}
