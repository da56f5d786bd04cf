//! vector_add in Rust: the C example (examples/vector_add/vector_add.c of gpuwasm) with the safe
//! layer of this crate; it embeds the kernel's committed sm_80 PTX and checks every element.
use wasi_cuda::{device_name, DeviceBuffer, Dim3, Module};

static PTX: &[u8] = include_bytes!("../../../../examples/vector_add/vector_add.sm_80.ptx");

fn main() -> Result<(), wasi_cuda::Error> {
    let n: u32 = 1 << 20;
    let mut seed: u32 = 1;
    let mut random = move || {
        seed = seed.wrapping_mul(1103515245).wrapping_add(12345);
        ((seed >> 8) & 0xffff) as f32 / 65536.0
    };
    let a: Vec<f32> = (0..n).map(|_| random()).collect();
    let b: Vec<f32> = (0..n).map(|_| random()).collect();
    let module = Module::load(PTX)?;
    // extern "C" __global__ void vector_add(const float* a, const float* b, float* c, unsigned n)
    let add = module.kernel("vector_add")?;
    let da = DeviceBuffer::from_slice(&a)?;
    let db = DeviceBuffer::from_slice(&b)?;
    let dc = DeviceBuffer::<f32>::zeroed(n as usize)?;
    add.launch(Dim3::x(n / 256), Dim3::x(256), &[&da, &db, &dc, &n])?;
    let mut c = vec![0f32; n as usize];
    dc.download(&mut c)?; // waits for the launch
    let wrong = (0..n as usize).filter(|&i| c[i] != a[i] + b[i]).count();
    println!("vector_add (Rust): {} elements on {}: {} wrong {}", n, device_name()?, wrong,
             if wrong == 0 { "OK" } else { "FAILED" });
    if wrong != 0 {
        std::process::exit(1);
    }
    Ok(())
}
