;; Linear memories are reused between instances (wasm_rt.cc's pool): what one instance wrote must
;; never be seen by the next, and pages it grew into must not stay reachable for the next.
;; `dirty` writes 0xab near both ends of the first page, grows to 40 pages (2.5 MiB, past the
;; 1 MiB the pool keeps resident) and writes into pages 10, 20 and 39.
(module
  (memory (export "memory") 1 100)
  (func (export "dirty") (result i32)
    (i32.store8 (i32.const 0) (i32.const 0xab))
    (i32.store (i32.const 65532) (i32.const -1))
    (drop (memory.grow (i32.const 39)))
    (i32.store (i32.const 655360) (i32.const -1))        ;; page 10, in the part kept resident
    (i32.store (i32.const 1310720) (i32.const -1))       ;; page 20
    (i64.store (i32.const 2621432) (i64.const -1))       ;; the last 8 bytes of page 39
    (i32.const 0))
  ;; The first page's bytes that `dirty` wrote: 0 in a fresh memory.
  (func (export "read_low") (result i32)
    (i32.or (i32.load8_u (i32.const 0)) (i32.load (i32.const 65532))))
  ;; Pages 10 and 20, beyond this memory's single page: trap out of bounds.
  (func (export "read_page_10") (result i32)
    (i32.load (i32.const 655360)))
  (func (export "read_page_20") (result i32)
    (i32.load (i32.const 1310720)))
  ;; Grows like `dirty` did and reads what it wrote there: 0 in a fresh memory.
  (func (export "grow_and_read") (result i32)
    (drop (memory.grow (i32.const 39)))
    (i32.or (i32.or (i32.load (i32.const 655360)) (i32.load (i32.const 1310720)))
            (i32.wrap_i64 (i64.load (i32.const 2621432)))))
)
