module github.com/heraldstreams/herald

go 1.26.8
