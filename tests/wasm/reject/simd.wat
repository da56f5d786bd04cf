;; expect: = module uses SIMD (simd128), which gpuwasm does not support
;; code: unsupported
(module (func (export "run") (result i32) (i32x4.extract_lane 0 (v128.const i32x4 1 2 3 4))))
