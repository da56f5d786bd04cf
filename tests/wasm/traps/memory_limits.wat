;; 64 initial pages (4 MiB), no maximum: instantiation fails under a smaller page cap, and
;; memory.grow stops at the cap (returns -1) instead of trapping.
(module
  (memory (export "memory") 64)
  (func (export "grow") (result i32) (memory.grow (i32.const 100)))
  (func (export "grow_small") (result i32) (memory.grow (i32.const 1)))
  (func (export "size") (result i32) (memory.size))
)
