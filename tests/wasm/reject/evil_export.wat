;; expect: ~ has characters outside [A-Za-z0-9_.$-]
;; code: invalid_argument
(module (func (export "x */ int injected; /*") (result i32) (i32.const 0)))
