; sums.com - x86-inspect sample: adds 1..100 in a loop, prints the total in
; decimal through a recursive print routine, and exits with return code 42.
; Good for breakpoints, stepping and the CFG.
; Build: nasm -f bin -o sums.com sums.asm
        cpu 8086
        org 100h

start:  xor ax, ax
        mov cx, 100
.add:   add ax, cx              ; AX = 100 + 99 + ... + 1
        loop .add
        push ax
        mov dx, msg_sum
        mov ah, 09h
        int 21h
        pop ax
        call print_dec
        mov dx, msg_crlf
        mov ah, 09h
        int 21h
        mov ax, 4C2Ah           ; exit code 42
        int 21h

; print_dec: prints AX in decimal (recursive: one call per digit)
print_dec:
        xor dx, dx
        mov bx, 10
        div bx                  ; AX = quotient, DX = last digit
        push dx
        or ax, ax
        jz .out
        call print_dec
.out:   pop dx
        add dl, '0'
        mov ah, 02h
        int 21h
        ret

msg_sum  db 'sum of 1..100 = $'
msg_crlf db 13, 10, '$'
