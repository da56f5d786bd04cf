;; expect: = module uses threads (shared memory, atomics), which gpuwasm does not support
;; code: unsupported
(module (memory 1 1 shared) (func (export "run") (result i32) (i32.atomic.load (i32.const 0))))
