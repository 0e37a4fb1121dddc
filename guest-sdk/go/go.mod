module toolhost/guest

go 1.27
