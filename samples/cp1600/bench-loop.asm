;; bench-loop -- an endless loop-heavy program for throughput measurement:
;; memory traffic, ALU, a shift, an untaken and a taken branch per pass.
;; Never halts: run it with cp1600_step {count: N}.
        ROMW    16
        ORG     $5000

start:  MVII    #0, R5
loop:   INCR    R0
        ADDR    R0, R1
        SLL     R1
        MVO     R1, $0200
        MVI     $0200, R2
        XORR    R2, R3
        DECR    R5
        BNEQ    loop
        B       start
