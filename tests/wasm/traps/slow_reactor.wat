;; A WASI reactor whose _initialize never returns: an instance of it cannot be set up before
;; any deadline, and that must read as a deadline (not as a broken module).
(module
  (memory (export "memory") 1)
  (func (export "_initialize") (loop $forever (br $forever)))
  (func (export "run") (result i32) (i32.const 0))
)
