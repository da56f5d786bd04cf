//! The gpuwasm guest interface for Rust guests (`--target wasm32-wasi`).
//!
//! [`sys`] has the raw `wasi_cuda` imports (docs/abi.md of gpuwasm); the rest is a safe layer:
//! a [`Module`] unloaded on drop, [`Kernel`]s looked up by name, [`DeviceBuffer<T>`] freed on drop,
//! launches whose arguments are buffers or numbers ([`KernelArg`]: a host slice or reference does
//! not compile), and errors as an [`Error`] with its [`ErrorKind`] and the host's reason.
//!
//! ```ignore
//! let module = Module::load(PTX)?;
//! let add = module.kernel("vector_add")?;
//! let a = DeviceBuffer::from_slice(&host_a)?;
//! add.launch(Dim3::x(n / 256), Dim3::x(256), &[&a, &b, &c, &n])?;
//! c.download(&mut host_c)?;   // waits for the launch
//! ```
use std::fmt;
use std::marker::PhantomData;

/// The raw imports of module `wasi_cuda` and the argument record, as the host defines them.
pub mod sys {
    /// One kernel argument (`struct wcu_arg`).
    #[repr(C)]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Arg {
        pub kind: u32,
        pub handle: u32,
        pub value: u64,
    }
    pub const ARG_B8: u32 = 1;
    pub const ARG_B16: u32 = 2;
    pub const ARG_B32: u32 = 3;
    pub const ARG_B64: u32 = 4;
    pub const ARG_BUFFER: u32 = 5;
    pub const ARG_BYTES: u32 = 6;

    #[link(wasm_import_module = "wasi_cuda")]
    extern "C" {
        pub fn device_info(out: *mut u8, len: i32) -> i32;
        pub fn module_load(ptx: *const u8, len: i32) -> i32;
        pub fn module_unload(module: i32) -> i32;
        pub fn function_get(module: i32, name: *const u8, len: i32) -> i32;
        pub fn mem_alloc(size: i64) -> i32;
        pub fn mem_free(buffer: i32) -> i32;
        pub fn memcpy_htod(buffer: i32, offset: i64, src: *const u8, len: i32) -> i32;
        pub fn memcpy_dtoh(dst: *mut u8, buffer: i32, offset: i64, len: i32) -> i32;
        pub fn memcpy_dtod(dst: i32, dst_offset: i64, src: i32, src_offset: i64, len: i64) -> i32;
        pub fn memset_d8(buffer: i32, offset: i64, value: i32, len: i64) -> i32;
        pub fn launch(kernel: i32, gx: i32, gy: i32, gz: i32, bx: i32, by: i32, bz: i32, shared: i32,
                      args: *const Arg, count: i32) -> i32;
        pub fn synchronize() -> i32;
        pub fn last_error(out: *mut u8, len: i32) -> i32;
    }
}

/// What went wrong: the `WCU_ERR_*` codes of the ABI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    NotPermitted,
    BadPointer,
    BadHandle,
    BadPtx,
    NotFound,
    BadArgs,
    BadDimensions,
    Quota,
    Busy,
    Deadline,
    Device,
    OutOfRange,
    Unsupported,
    Internal,
    /// A code this crate does not know (a newer host).
    Other(i32),
}

impl ErrorKind {
    pub fn from_code(code: i32) -> ErrorKind {
        match code {
            -1 => ErrorKind::NotPermitted,
            -2 => ErrorKind::BadPointer,
            -3 => ErrorKind::BadHandle,
            -4 => ErrorKind::BadPtx,
            -5 => ErrorKind::NotFound,
            -6 => ErrorKind::BadArgs,
            -7 => ErrorKind::BadDimensions,
            -8 => ErrorKind::Quota,
            -9 => ErrorKind::Busy,
            -10 => ErrorKind::Deadline,
            -11 => ErrorKind::Device,
            -12 => ErrorKind::OutOfRange,
            -13 => ErrorKind::Unsupported,
            -14 => ErrorKind::Internal,
            c => ErrorKind::Other(c),
        }
    }
}

/// A failed call: its kind, the raw code and the host's reason (`last_error`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub code: i32,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} ({}): {}", self.kind, self.code, self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// The host's reason for the last failed call.
pub fn last_error() -> String {
    let mut buf = vec![0u8; 512];
    let n = unsafe { sys::last_error(buf.as_mut_ptr(), buf.len() as i32) };
    buf.truncate((n.max(0) as usize).min(buf.len()));
    String::from_utf8_lossy(&buf).into_owned()
}

fn check(code: i32) -> Result<i32> {
    if code < 0 {
        Err(Error { kind: ErrorKind::from_code(code), code, message: last_error() })
    } else {
        Ok(code)
    }
}

/// Waits for the instance's device work; the first asynchronous error (a fault, the deadline).
pub fn synchronize() -> Result<()> {
    check(unsafe { sys::synchronize() }).map(|_| ())
}

/// The name of the device the instance got.
pub fn device_name() -> Result<String> {
    let mut info = [0u8; 120];
    check(unsafe { sys::device_info(info.as_mut_ptr(), info.len() as i32) })?;
    let name = &info[56..120];
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Ok(String::from_utf8_lossy(&name[..end]).into_owned())
}

/// Loaded PTX; unloaded when dropped (launches already queued keep it alive).
pub struct Module {
    handle: i32,
}

impl Module {
    pub fn load(ptx: &[u8]) -> Result<Module> {
        let handle = check(unsafe { sys::module_load(ptx.as_ptr(), ptx.len() as i32) })?;
        Ok(Module { handle })
    }
    /// The kernel `name` (an `.entry`: `extern "C"` in the .cu keeps its name).
    pub fn kernel(&self, name: &str) -> Result<Kernel<'_>> {
        let handle = check(unsafe { sys::function_get(self.handle, name.as_ptr(), name.len() as i32) })?;
        Ok(Kernel { handle, _module: PhantomData })
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        unsafe {
            sys::module_unload(self.handle);
        }
    }
}

/// A launch's grid or block shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

impl Dim3 {
    pub fn x(x: u32) -> Dim3 {
        Dim3 { x, y: 1, z: 1 }
    }
    pub fn xy(x: u32, y: u32) -> Dim3 {
        Dim3 { x, y, z: 1 }
    }
}

/// What may be passed for a kernel parameter: a device buffer (a pointer parameter) or a number.
/// Host memory is not: a guest's pointers mean nothing on the device.
pub trait KernelArg {
    fn record(&self) -> sys::Arg;
}

macro_rules! scalar_arg {
    ($t:ty, $kind:expr, $bits:expr) => {
        impl KernelArg for $t {
            fn record(&self) -> sys::Arg {
                sys::Arg { kind: $kind, handle: 0, value: ($bits)(*self) }
            }
        }
    };
}
scalar_arg!(u8, sys::ARG_B8, |v: u8| v as u64);
scalar_arg!(i8, sys::ARG_B8, |v: i8| v as u8 as u64);
scalar_arg!(u16, sys::ARG_B16, |v: u16| v as u64);
scalar_arg!(i16, sys::ARG_B16, |v: i16| v as u16 as u64);
scalar_arg!(u32, sys::ARG_B32, |v: u32| v as u64);
scalar_arg!(i32, sys::ARG_B32, |v: i32| v as u32 as u64);
scalar_arg!(f32, sys::ARG_B32, |v: f32| v.to_bits() as u64);
scalar_arg!(u64, sys::ARG_B64, |v: u64| v);
scalar_arg!(i64, sys::ARG_B64, |v: i64| v as u64);
scalar_arg!(f64, sys::ARG_B64, |v: f64| v.to_bits());

/// A kernel of a module (it cannot outlive the module).
pub struct Kernel<'m> {
    handle: i32,
    _module: PhantomData<&'m Module>,
}

impl Kernel<'_> {
    /// Enqueues the kernel with one argument per parameter, in order; returns without waiting.
    pub fn launch(&self, grid: Dim3, block: Dim3, args: &[&dyn KernelArg]) -> Result<()> {
        self.launch_shared(grid, block, 0, args)
    }
    /// The same with `shared_bytes` of dynamic shared memory.
    pub fn launch_shared(&self, grid: Dim3, block: Dim3, shared_bytes: u32, args: &[&dyn KernelArg]) -> Result<()> {
        let records: Vec<sys::Arg> = args.iter().map(|a| a.record()).collect();
        check(unsafe {
            sys::launch(self.handle, grid.x as i32, grid.y as i32, grid.z as i32, block.x as i32, block.y as i32,
                        block.z as i32, shared_bytes as i32, records.as_ptr(), records.len() as i32)
        })
        .map(|_| ())
    }
}

/// Device memory for `len()` elements of T, freed when dropped.
pub struct DeviceBuffer<T: Copy> {
    handle: i32,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: Copy> DeviceBuffer<T> {
    /// `len` zeroed elements.
    pub fn zeroed(len: usize) -> Result<DeviceBuffer<T>> {
        let handle = check(unsafe { sys::mem_alloc((len * std::mem::size_of::<T>()) as i64) })?;
        Ok(DeviceBuffer { handle, len, _t: PhantomData })
    }
    /// A buffer holding a copy of `data`.
    pub fn from_slice(data: &[T]) -> Result<DeviceBuffer<T>> {
        let b = DeviceBuffer::zeroed(data.len())?;
        b.upload(data)?;
        Ok(b)
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn handle(&self) -> i32 {
        self.handle
    }
    /// Copies `data` to the first elements (ordered after earlier work).
    pub fn upload(&self, data: &[T]) -> Result<()> {
        let bytes = std::mem::size_of_val(data);
        check(unsafe { sys::memcpy_htod(self.handle, 0, data.as_ptr() as *const u8, bytes as i32) }).map(|_| ())
    }
    /// Waits for earlier work, then copies the first `out.len()` elements into `out`.
    pub fn download(&self, out: &mut [T]) -> Result<()> {
        let bytes = std::mem::size_of_val(out);
        check(unsafe { sys::memcpy_dtoh(out.as_mut_ptr() as *mut u8, self.handle, 0, bytes as i32) }).map(|_| ())
    }
}

impl<T: Copy> KernelArg for DeviceBuffer<T> {
    fn record(&self) -> sys::Arg {
        sys::Arg { kind: sys::ARG_BUFFER, handle: self.handle as u32, value: 0 }
    }
}

impl<T: Copy> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        unsafe {
            sys::mem_free(self.handle);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_kinds_follow_the_abi_codes() {
        assert_eq!(ErrorKind::from_code(-5), ErrorKind::NotFound);
        assert_eq!(ErrorKind::from_code(-11), ErrorKind::Device);
        assert_eq!(ErrorKind::from_code(-99), ErrorKind::Other(-99));
    }

    #[test]
    fn numbers_become_records_of_their_size() {
        assert_eq!(7u32.record(), sys::Arg { kind: sys::ARG_B32, handle: 0, value: 7 });
        assert_eq!((-1i32).record().value, 0xffff_ffff);
        assert_eq!(1.5f32.record().value, 1.5f32.to_bits() as u64);
        assert_eq!(2u64.record().kind, sys::ARG_B64);
    }
}
