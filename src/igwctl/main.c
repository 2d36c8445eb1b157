#include <stdio.h>
int main(void){puts("igwctl");return 0;}
