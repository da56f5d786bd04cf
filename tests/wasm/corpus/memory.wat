;; Linear memory semantics: every load/store width and signedness, unaligned access, offsets,
;; memory.size/grow (within and beyond the declared maximum), bulk fill/copy (overlapping both
;; ways), data segments. Each test returns a hash; memory contents are compared too.
(module
  (memory (export "memory") 1 4)
  (data (i32.const 100) "\01\02\03\04\05\06\07\08\f0\f1\f2\f3\f4\f5\f6\f7\80\7f\ff\00")
  (func $mix (param $h i32) (param $v i32) (result i32)
    (i32.mul (i32.xor (local.get $h) (local.get $v)) (i32.const 0x01000193)))
  (func (export "test_loads") (result i32) (local $h i32) (local $p i32)
    (loop $l
      (local.set $h (call $mix (local.get $h) (i32.load8_s offset=100 (local.get $p))))
      (local.set $h (call $mix (local.get $h) (i32.load8_u offset=100 (local.get $p))))
      (local.set $h (call $mix (local.get $h) (i32.load16_s offset=100 (local.get $p))))
      (local.set $h (call $mix (local.get $h) (i32.load16_u offset=100 (local.get $p))))
      (local.set $h (call $mix (local.get $h) (i32.load offset=100 (local.get $p))))
      (local.set $h (call $mix (local.get $h) (i32.wrap_i64 (i64.load8_s offset=100 (local.get $p)))))
      (local.set $h (call $mix (local.get $h) (i32.wrap_i64 (i64.load16_s offset=100 (local.get $p)))))
      (local.set $h (call $mix (local.get $h) (i32.wrap_i64 (i64.shr_u (i64.load32_s offset=100 (local.get $p)) (i64.const 7)))))
      (local.set $h (call $mix (local.get $h) (i32.wrap_i64 (i64.shr_u (i64.load32_u offset=100 (local.get $p)) (i64.const 3)))))
      (local.set $h (call $mix (local.get $h) (i32.wrap_i64 (i64.shr_u (i64.load offset=100 (local.get $p)) (i64.const 17)))))
      (local.set $h (call $mix (local.get $h) (i32.reinterpret_f32 (f32.load offset=100 (local.get $p)))))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $p) (i32.const 12))))
    (local.get $h))
  (func (export "test_stores") (result i32) (local $p i32)
    (loop $l
      (i32.store8 offset=1000 (local.get $p) (i32.mul (local.get $p) (i32.const 0x01010101)))
      (i32.store16 offset=1100 (i32.mul (local.get $p) (i32.const 3)) (i32.mul (local.get $p) (i32.const 0x9e3779b9)))
      (i32.store offset=1300 (i32.mul (local.get $p) (i32.const 5)) (i32.mul (local.get $p) (i32.const 0x9e3779b9)))
      (i64.store offset=1600 (i32.mul (local.get $p) (i32.const 7)) (i64.mul (i64.extend_i32_u (local.get $p)) (i64.const 0x9e3779b97f4a7c15)))
      (i64.store8 offset=2100 (local.get $p) (i64.const -1))
      (i64.store16 offset=2200 (local.get $p) (i64.const 0x123456789))
      (i64.store32 offset=2300 (local.get $p) (i64.const 0x987654321))
      (f64.store offset=2400 (i32.mul (local.get $p) (i32.const 9)) (f64.div (f64.convert_i32_u (local.get $p)) (f64.const 3)))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $p) (i32.const 40))))
    (i32.load offset=1300 (i32.const 17)))
  (func (export "test_grow") (result i32) (local $h i32)
    (local.set $h (memory.size))
    (local.set $h (call $mix (local.get $h) (memory.grow (i32.const 1))))
    (local.set $h (call $mix (local.get $h) (memory.size)))
    (local.set $h (call $mix (local.get $h) (memory.grow (i32.const 0))))
    (local.set $h (call $mix (local.get $h) (memory.grow (i32.const 10))))  ;; beyond max 4: -1
    (local.set $h (call $mix (local.get $h) (memory.grow (i32.const 2))))
    (local.set $h (call $mix (local.get $h) (memory.size)))
    ;; new pages are zero and usable up to the last byte
    (local.set $h (call $mix (local.get $h) (i32.load (i32.const 0x3fffc))))
    (i32.store (i32.const 0x3fffc) (i32.const 0xabcdef01))
    (call $mix (local.get $h) (i32.load (i32.const 0x3fffc))))
  (func (export "test_bulk") (result i32) (local $i i32) (local $h i32)
    (memory.fill (i32.const 5000) (i32.const 0x5a) (i32.const 300))
    (memory.fill (i32.const 5100) (i32.const 0x1ff) (i32.const 10))     ;; value truncated to 0xff
    (memory.copy (i32.const 6000) (i32.const 100) (i32.const 20))
    (memory.copy (i32.const 6005) (i32.const 6000) (i32.const 12))      ;; overlapping, forward
    (memory.copy (i32.const 5990) (i32.const 6000) (i32.const 12))      ;; overlapping, backward
    (memory.fill (i32.const 7000) (i32.const 1) (i32.const 0))          ;; empty
    (loop $l
      (local.set $h (call $mix (local.get $h) (i32.load8_u offset=4990 (local.get $i))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 1100))))
    (local.get $h))
  (func (export "test_unaligned_overlap") (result i32) (local $i i32) (local $h i32)
    (loop $l
      (i64.store offset=8001 (local.get $i) (i64.mul (i64.extend_i32_u (i32.add (local.get $i) (i32.const 1))) (i64.const 0x0101010101010101)))
      (local.set $i (i32.add (local.get $i) (i32.const 3)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 60))))
    (local.set $i (i32.const 0))
    (loop $r
      (local.set $h (call $mix (local.get $h) (i32.load offset=7999 (local.get $i))))
      (local.set $h (call $mix (local.get $h) (i32.wrap_i64 (i64.load16_u offset=8003 (local.get $i)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $r (i32.lt_u (local.get $i) (i32.const 64))))
    (local.get $h))
)
