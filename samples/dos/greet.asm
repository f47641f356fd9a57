; greet.com - x86-inspect sample: prints a greeting and the command tail,
; calls a small subroutine for each line (visible in list_functions), exits
; with return code 0.
; Build: nasm -f bin -o greet.com greet.asm
        cpu 8086
        org 100h

start:  mov dx, msg_hello
        call puts
        mov dx, msg_tail
        call puts
        mov cl, [80h]           ; command tail length from the PSP
        xor ch, ch
        mov si, 81h
        jcxz .done
.tail:  lodsb
        mov dl, al
        call putc
        loop .tail
.done:  mov dx, msg_crlf
        call puts
        mov ax, 4C00h
        int 21h

putc:   mov ah, 02h
        int 21h
        ret

puts:   mov ah, 09h
        int 21h
        ret

msg_hello db 'Hello from benchtop x86-inspect!', 13, 10, '$'
msg_tail  db 'Command tail:[', '$'
msg_crlf  db ']', 13, 10, '$'
