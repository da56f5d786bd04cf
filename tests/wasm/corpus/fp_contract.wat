;; Multiply-then-add must round twice: wasm has no fused multiply-add, so a C compiler that fuses
;; a*b+c (FMA, allowed by GCC's default -ffp-contract=fast on targets that have it) computes a
;; different result. Operands come from memory so that nothing folds at compile time; each test
;; returns the result's bits. Compiled with the engine's flags here and with -march=x86-64-v3 in
;; engine_test.cc (Compile.multiply_add_is_never_fused).
(module
  (memory (export "memory") 1)
  ;; 0: f64 1+2^-30, 8: f64 1-2^-30, 16: f64 -1, 24: f32 1+2^-12, 28: f32 -(1+2^-11)
  (data (i32.const 0) "\00\00\40\00\00\00\f0\3f" "\00\00\80\ff\ff\ff\ef\3f" "\00\00\00\00\00\00\f0\bf"
                      "\00\08\80\3f" "\00\10\80\bf")
  (func $bits64 (param $x f64) (result i32)
    (i32.xor (i32.wrap_i64 (i64.reinterpret_f64 (local.get $x)))
             (i32.wrap_i64 (i64.shr_u (i64.reinterpret_f64 (local.get $x)) (i64.const 32)))))
  (func (export "test_f64_mul_add") (result i32)
    (call $bits64 (f64.add (f64.mul (f64.load (i32.const 0)) (f64.load (i32.const 8))) (f64.load (i32.const 16)))))
  (func (export "test_f64_mul_sub") (result i32)
    (call $bits64 (f64.sub (f64.load (i32.const 16))
                           (f64.mul (f64.load (i32.const 0)) (f64.load (i32.const 8))))))
  (func (export "test_f32_mul_add") (result i32)
    (i32.reinterpret_f32 (f32.add (f32.mul (f32.load (i32.const 24)) (f32.load (i32.const 24)))
                                  (f32.load (i32.const 28)))))
  (func (export "test_f32_mul_sub") (result i32)
    (i32.reinterpret_f32 (f32.sub (f32.mul (f32.load (i32.const 24)) (f32.load (i32.const 24)))
                                  (f32.neg (f32.load (i32.const 28))))))
  ;; A dot product: sum += x[i] * y[i], where every product is inexact.
  (func (export "test_f64_dot") (result i32) (local $i i32) (local $x f64) (local $sum f64)
    (local.set $sum (f64.load (i32.const 16)))
    (local.set $x (f64.load (i32.const 0)))
    (loop $l
      (local.set $sum (f64.add (local.get $sum) (f64.mul (local.get $x) (f64.load (i32.const 8)))))
      (local.set $x (f64.mul (local.get $x) (f64.load (i32.const 0))))
      (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (i32.const 8))))
    (call $bits64 (local.get $sum)))
)
