;; 02-counter-loop -- count up in R0 while R1 counts down from 10.
;; Final state: R0 = 10, R1 = 0, Z = 1, RAM $0200 = 10, halted.
        ROMW    16
        ORG     $5000

start:  CLRR    R0              ; counter
        MVII    #10, R1         ; iterations left
loop:   INCR    R0
        DECR    R1              ; Z=1 once R1 reaches 0
        BNEQ    loop
        MVO     R0, $0200
        HLT
