
ROWS
 N  Obj     
 L  capacity
COLUMNS
    MARK0000  'MARKER'                 'INTORG'
    a         Obj       10
    a         capacity  5
    b    13
    b         capacity  7
    c         Obj       7
    c         capacity  4
    d         Obj       8
    d         capacity  5
    e         Obj       4
    e         capacity  3
    MARK0001  'MARKER'                 'INTEND'
RHS
    RHS_V     capacity  14
BOUNDS
 BV BOUND     a       
 BV BOUND     b       
 BV BOUND     c       
 BV BOUND     d       
 BV BOUND     e       
ENDATA
