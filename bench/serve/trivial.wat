;; The trivial function of the serving benchmark: reads nothing, writes "ok\n" to its output.
;; Imports only gpuwasm.output_write, so the Node.js baseline can run the very same module.
(module
  (import "gpuwasm" "output_write" (func $output_write (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "ok\n")
  (func (export "run") (result i32)
    (drop (call $output_write (i32.const 16) (i32.const 3)))
    (i32.const 0)))
