;; 01-hello-world -- the smallest useful program: load two constants, add
;; them, copy the sum and store it in 16-bit RAM.
;; Final state: R0 = 142, R1 = 100, R2 = 142, RAM $0200 = 142, halted.
        ROMW    16
        ORG     $5000

start:  MVII    #100, R1        ; R1 = 100
        MVII    #42, R0         ; R0 = 42
        ADDR    R1, R0          ; R0 = 142
        MOVR    R0, R2          ; R2 = 142
        MVO     R0, $0200       ; RAM $0200 = 142
        HLT
