;; 05-signed-math -- signed overflow, the status word, two's complement and
;; a carry from adding a negative number.
;; Final state: R0 = $8000 (32768), R1 = $A0A0 (41120: S and OV as GSWD
;; saw them), R2 = 2, R3 = $FFFD (65533 = -3), flags C=1 OV=0 Z=0 S=0,
;; RAM $0200 = 32768, $0201 = 41120, $0202 = 2, halted.
        ROMW    16
        ORG     $5000

start:  MVII    #$7FFF, R0      ; largest positive number
        ADDI    #1, R0          ; $8000: S=1 OV=1 (signed overflow), C=0
        GSWD    R1              ; R1 = $A0A0
        MVII    #$FFFB, R2      ; -5
        NEGR    R2              ; 5
        MVII    #$FFFD, R3      ; -3
        ADDR    R3, R2          ; 5 + (-3) = 2, carry out: C=1, OV=0
        MVO     R0, $0200
        MVO     R1, $0201
        MVO     R2, $0202
        HLT
