;; 06-nested-calls -- three levels of calls: lvl1 and lvl2 save R5 on the
;; stack (PSHR R5 ... PULR R7), the leaf returns through R4 (JSR R4 / JR R4).
;; Final state: R0 = 111, R6 = $02F0 (stack balanced), R4 = the return
;; address into lvl2, R5 = the return address into lvl1,
;; RAM $0200 = 111, RAM $02F0/$02F1 = the saved return addresses, halted.
        ROMW    16
        ORG     $5000

start:  MVII    #$02F0, R6
        CLRR    R0
        CALL    lvl1            ; R0 = 1 + 10 + 100
        MVO     R0, $0200
        HLT

lvl1:   PSHR    R5
        INCR    R0              ; +1
        CALL    lvl2
        PULR    R7

lvl2:   PSHR    R5
        ADDI    #10, R0         ; +10
        JSR     R4, leaf
        PULR    R7

leaf:   ADDI    #100, R0        ; +100
        JR      R4
