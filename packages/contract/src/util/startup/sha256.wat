;; SHA-256's compression function (FIPS 180-4, 6.2.2) for src/util/sha256.ts, which pads the message and keeps the
;; hash value. `npm run gen` compiles this file to src/util/sha256-wasm.generated.ts.
;;
;; Memory (one page): the hash value H0..H7 at 0, the round constants K at 32, the message schedule W at 288, the
;; blocks to compress from 1024 to the end. The message's words are big-endian; every other word is an i32 as
;; WebAssembly keeps it (little-endian).
(module
  (memory (export "memory") 1)
  (data (i32.const 32)
    "\98\2f\8a\42\91\44\37\71\cf\fb\c0\b5\a5\db\b5\e9\5b\c2\56\39\f1\11\f1\59\a4\82\3f\92\d5\5e\1c\ab"
    "\98\aa\07\d8\01\5b\83\12\be\85\31\24\c3\7d\0c\55\74\5d\be\72\fe\b1\de\80\a7\06\dc\9b\74\f1\9b\c1"
    "\c1\69\9b\e4\86\47\be\ef\c6\9d\c1\0f\cc\a1\0c\24\6f\2c\e9\2d\aa\84\74\4a\dc\a9\b0\5c\da\88\f9\76"
    "\52\51\3e\98\6d\c6\31\a8\c8\27\03\b0\c7\7f\59\bf\f3\0b\e0\c6\47\91\a7\d5\51\63\ca\06\67\29\29\14"
    "\85\0a\b7\27\38\21\1b\2e\fc\6d\2c\4d\13\0d\38\53\54\73\0a\65\bb\0a\6a\76\2e\c9\c2\81\85\2c\72\92"
    "\a1\e8\bf\a2\4b\66\1a\a8\70\8b\4b\c2\a3\51\6c\c7\19\e8\92\d1\24\06\99\d6\85\35\0e\f4\70\a0\6a\10"
    "\16\c1\a4\19\08\6c\37\1e\4c\77\48\27\b5\bc\b0\34\b3\0c\1c\39\4a\aa\d8\4e\4f\ca\9c\5b\f3\6f\2e\68"
    "\ee\82\8f\74\6f\63\a5\78\14\78\c8\84\08\02\c7\8c\fa\ff\be\90\eb\6c\50\a4\f7\a3\f9\be\f2\78\71\c6")

  ;; A big-endian word read from (or for) the message.
  (func $swap (param $x i32) (result i32)
    (i32.or
      (i32.and (i32.rotl (local.get $x) (i32.const 8)) (i32.const 0x00ff00ff))
      (i32.and (i32.rotr (local.get $x) (i32.const 8)) (i32.const 0xff00ff00))))

  ;; Compresses the `count` 64-byte blocks at 1024 into H.
  (func (export "compress") (param $count i32)
    (local $block i32) (local $i i32) (local $x i32) (local $y i32) (local $t1 i32) (local $t2 i32)
    (local $a i32) (local $b i32) (local $c i32) (local $d i32) (local $e i32) (local $f i32) (local $g i32) (local $h i32)
    (local.set $block (i32.const 1024))
    (block $done
      (loop $blocks
        (br_if $done (i32.eqz (local.get $count)))
        ;; W0..W15: the block's words.
        (local.set $i (i32.const 0))
        (loop $load
          (i32.store offset=288 (local.get $i) (call $swap (i32.load (i32.add (local.get $block) (local.get $i)))))
          (local.set $i (i32.add (local.get $i) (i32.const 4)))
          (br_if $load (i32.lt_u (local.get $i) (i32.const 64))))
        ;; W16..W63: W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16].
        (loop $schedule
          (local.set $x (i32.load offset=288 (i32.sub (local.get $i) (i32.const 60))))
          (local.set $y (i32.load offset=288 (i32.sub (local.get $i) (i32.const 8))))
          (i32.store offset=288 (local.get $i)
            (i32.add
              (i32.add
                (i32.xor (i32.xor (i32.rotr (local.get $y) (i32.const 17)) (i32.rotr (local.get $y) (i32.const 19))) (i32.shr_u (local.get $y) (i32.const 10)))
                (i32.load offset=288 (i32.sub (local.get $i) (i32.const 28))))
              (i32.add
                (i32.xor (i32.xor (i32.rotr (local.get $x) (i32.const 7)) (i32.rotr (local.get $x) (i32.const 18))) (i32.shr_u (local.get $x) (i32.const 3)))
                (i32.load offset=288 (i32.sub (local.get $i) (i32.const 64))))))
          (local.set $i (i32.add (local.get $i) (i32.const 4)))
          (br_if $schedule (i32.lt_u (local.get $i) (i32.const 256))))
        (local.set $a (i32.load offset=0 (i32.const 0)))
        (local.set $b (i32.load offset=4 (i32.const 0)))
        (local.set $c (i32.load offset=8 (i32.const 0)))
        (local.set $d (i32.load offset=12 (i32.const 0)))
        (local.set $e (i32.load offset=16 (i32.const 0)))
        (local.set $f (i32.load offset=20 (i32.const 0)))
        (local.set $g (i32.load offset=24 (i32.const 0)))
        (local.set $h (i32.load offset=28 (i32.const 0)))
        ;; 64 rounds.
        (local.set $i (i32.const 0))
        (loop $rounds
          ;; T1 = h + S1(e) + Ch(e, f, g) + K[t] + W[t]
          (local.set $t1
            (i32.add
              (i32.add
                (i32.add (local.get $h)
                  (i32.xor (i32.xor (i32.rotr (local.get $e) (i32.const 6)) (i32.rotr (local.get $e) (i32.const 11))) (i32.rotr (local.get $e) (i32.const 25))))
                (i32.xor (i32.and (local.get $e) (local.get $f)) (i32.and (i32.xor (local.get $e) (i32.const -1)) (local.get $g))))
              (i32.add (i32.load offset=32 (local.get $i)) (i32.load offset=288 (local.get $i)))))
          ;; T2 = S0(a) + Maj(a, b, c)
          (local.set $t2
            (i32.add
              (i32.xor (i32.xor (i32.rotr (local.get $a) (i32.const 2)) (i32.rotr (local.get $a) (i32.const 13))) (i32.rotr (local.get $a) (i32.const 22)))
              (i32.xor (i32.xor (i32.and (local.get $a) (local.get $b)) (i32.and (local.get $a) (local.get $c))) (i32.and (local.get $b) (local.get $c)))))
          (local.set $h (local.get $g))
          (local.set $g (local.get $f))
          (local.set $f (local.get $e))
          (local.set $e (i32.add (local.get $d) (local.get $t1)))
          (local.set $d (local.get $c))
          (local.set $c (local.get $b))
          (local.set $b (local.get $a))
          (local.set $a (i32.add (local.get $t1) (local.get $t2)))
          (local.set $i (i32.add (local.get $i) (i32.const 4)))
          (br_if $rounds (i32.lt_u (local.get $i) (i32.const 256))))
        (i32.store offset=0 (i32.const 0) (i32.add (i32.load offset=0 (i32.const 0)) (local.get $a)))
        (i32.store offset=4 (i32.const 0) (i32.add (i32.load offset=4 (i32.const 0)) (local.get $b)))
        (i32.store offset=8 (i32.const 0) (i32.add (i32.load offset=8 (i32.const 0)) (local.get $c)))
        (i32.store offset=12 (i32.const 0) (i32.add (i32.load offset=12 (i32.const 0)) (local.get $d)))
        (i32.store offset=16 (i32.const 0) (i32.add (i32.load offset=16 (i32.const 0)) (local.get $e)))
        (i32.store offset=20 (i32.const 0) (i32.add (i32.load offset=20 (i32.const 0)) (local.get $f)))
        (i32.store offset=24 (i32.const 0) (i32.add (i32.load offset=24 (i32.const 0)) (local.get $g)))
        (i32.store offset=28 (i32.const 0) (i32.add (i32.load offset=28 (i32.const 0)) (local.get $h)))
        (local.set $block (i32.add (local.get $block) (i32.const 64)))
        (local.set $count (i32.sub (local.get $count) (i32.const 1)))
        (br $blocks)))))
