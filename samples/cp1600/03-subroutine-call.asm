;; 03-subroutine-call -- JSR through R5 to a leaf (returns with JR R5) and
;; to a subroutine that saves its return address on the stack (PSHR R5 /
;; PULR R7). The stack starts at $02F0 and grows upward.
;; Final state: R0 = 13, R6 = $02F0 (balanced), RAM $0200 = 10,
;; RAM $0201 = 13, RAM $02F0 = the return address pushed by add3, halted.
        ROMW    16
        ORG     $5000

start:  MVII    #$02F0, R6      ; stack pointer
        MVII    #5, R0
        JSR     R5, double      ; R0 = 10
        MVO     R0, $0200
        CALL    add3            ; CALL = JSR R5; R0 = 13
        MVO     R0, $0201
        HLT

double: ADDR    R0, R0          ; leaf: no stack needed
        JR      R5

add3:   PSHR    R5              ; save the return address
        INCR    R0
        INCR    R0
        INCR    R0
        PULR    R7              ; return
