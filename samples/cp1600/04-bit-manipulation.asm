;; 04-bit-manipulation -- count the set bits of $00B4 by shifting each bit
;; into the carry (SLLC) and adding it (ADCR); then extract a byte with
;; SWAP and ANDI.
;; Final state: R0 = 0, R1 = 4 (popcount of $00B4), R2 = 0,
;; R3 = $0012 (18), RAM $0200 = 4, RAM $0201 = $0012, halted.
        ROMW    16
        ORG     $5000

start:  MVII    #$00B4, R0      ; %1011_0100
        CLRR    R1              ; bit count
        MVII    #16, R2         ; bits to examine
loop:   SLLC    R0              ; C = bit 15, R0 <<= 1
        ADCR    R1              ; R1 += C
        DECR    R2
        BNEQ    loop
        MVII    #$1234, R3
        SWAP    R3              ; $3412
        ANDI    #$00FF, R3      ; $0012: the original high byte
        MVO     R1, $0200
        MVO     R3, $0201
        HLT
